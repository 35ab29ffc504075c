"""Attribution rules (pure) and command classes."""

from __future__ import annotations

import pytest

from frontdesk.telemetry.attribution import (
    EXCLUDED,
    PERSON,
    Actor,
    Attribution,
    Harness,
    attribute,
    harness_of_env,
    harness_of_exe,
)
from frontdesk.telemetry.classify import CommandClass as C
from frontdesk.telemetry.classify import classify

CLAUDE = Attribution(Actor.AGENT, Harness.CLAUDE_CODE)


@pytest.mark.parametrize(
    ("comm", "argv", "want"),
    [
        ("claude", ["/opt/x/claude", "-p"], Harness.CLAUDE_CODE),
        ("node", ["node", "/usr/lib/node_modules/@google/gemini-cli/dist/index.js"], Harness.GEMINI),
        ("node", ["node", "/x/node_modules/@openai/codex/bin/codex.js"], Harness.CODEX),
        ("cursor-agent", ["cursor-agent"], Harness.CURSOR),
        ("copilot", ["copilot"], Harness.COPILOT),
        ("opencode", ["opencode", "run"], Harness.OPENCODE),
        ("python3", ["python3", "claude.py"], None),
        ("node", ["node", "server.js"], None),
    ],
)
def test_harness_by_executable(comm: str, argv: list[str], want: Harness | None) -> None:
    assert harness_of_exe(comm, argv) is want


@pytest.mark.parametrize(
    ("env", "want"),
    [
        ({"CLAUDECODE": "1"}, Harness.CLAUDE_CODE),
        ({"CODEX_THREAD_ID": "t"}, Harness.CODEX),
        ({"CODEX_HOME": "/h"}, None),
        ({"AI_AGENT": "gemini-cli_0.1_agent"}, Harness.GEMINI),
        ({"AI_AGENT": "someone-new"}, Harness.OTHER),
        ({}, None),
    ],
)
def test_harness_by_environment(env: dict[str, str], want: Harness | None) -> None:
    assert harness_of_env(env) is want


def test_an_agent_ancestor_wins_over_a_tty_shell() -> None:
    assert attribute("bash", ["bash", "-i"], {}, 34816, CLAUDE) == CLAUDE


def test_a_tty_shell_is_a_person_and_its_children_too() -> None:
    shell = attribute("bash", ["-bash"], {}, 34816, None)
    assert shell == PERSON
    assert attribute("make", ["make"], {}, 0, shell) == PERSON


def test_an_agent_started_by_a_person_is_the_agent() -> None:
    assert attribute("claude", ["claude"], {}, 34816, PERSON) == CLAUDE


def test_no_tty_no_agent_is_excluded() -> None:
    assert attribute("bash", ["bash", "x.sh"], {}, 0, None) == EXCLUDED
    assert attribute("sleep", ["sleep", "1"], {}, 34816, None) == EXCLUDED


@pytest.mark.parametrize(
    ("argv", "want"),
    [
        (["cat", "a.py"], (C.FILE_READ,)),
        (["sed", "-i", "s/a/b/", "f"], (C.FILE_EDIT,)),
        (["sbatch", "job.sh"], (C.SCHED_SUBMIT,)),
        (["squeue", "--me"], (C.SCHED_QUERY,)),
        (["scancel", "12"], (C.SCHED_CANCEL,)),
        (["scontrol", "update", "x"], ()),
        (["git", "clone", "https://x/y"], (C.FETCH, C.VCS)),
        (["git", "push", "--force"], (C.DESTRUCTIVE, C.VCS)),
        (["rm", "-rf", "build"], (C.DESTRUCTIVE,)),
        (["rm", "a.txt"], ()),
        (["dd", "if=/dev/zero", "of=/dev/sdz"], (C.DESTRUCTIVE,)),
        (["grep", "-rn", "x", "."], (C.TREE_WALK,)),
        (["find", ".", "-name", "*.py"], (C.TREE_WALK,)),
        (["bash", "-c", "pip install torch && python x.py"], (C.PACKAGE,)),
        (["sudo", "-u", "x", "env", "A=1", "timeout", "5", "make", "-j4"], (C.BUILD,)),
        (["python3", "-m", "pip", "install", "x"], (C.PACKAGE,)),
        (["frontdesk", "submit", "job.yaml"], (C.SCHED_SUBMIT,)),
        (["curl", "-O", "https://x"], (C.FETCH,)),
        (["bash", "-c", "unbalanced 'quote"], ()),
        ([], ()),
    ],
)
def test_command_classes(argv: list[str], want: tuple[C, ...]) -> None:
    assert classify(argv) == tuple(sorted(want))
