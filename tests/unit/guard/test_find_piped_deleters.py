"""find piping its matches to a deleter through xargs or parallel is read as the `find ... -exec CMD {} +` it
amounts to: over a home, root, system, shared or protected tree it is stopped like `find ~ -exec rm`, over a
whole project root like `rm -rf` on it; a filtered find in the working tree stays allowed (strings only,
nothing runs)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "data" / "guard"))

from corpus_loader import corpus_context  # noqa: E402

from frontdesk.guard.checker import check  # noqa: E402
from frontdesk.guard.model import Decision  # noqa: E402

# (command, decision, rule): each the same as its -exec spelling
STOPPED = [
    ("find ~ | xargs rm", Decision.DENY, "fs.rm-root"),
    ("find / | xargs -0 rm -rf", Decision.DENY, "fs.rm-root"),
    ("find / -name x -print0 | xargs -0 rm -rf", Decision.ASK, "fs.rm-root"),
    ("find ~ -name '*.log' | xargs rm", Decision.ASK, "fs.rm-root"),
    ("find ~ | grep foo | xargs rm", Decision.ASK, "fs.rm-root"),
    ("find /etc | parallel rm {}", Decision.DENY, "fs.rm-root"),
    ("find ~ | xargs -n1 sh -c 'rm -rf $0'", Decision.DENY, "fs.rm-root"),
    ("find ~/.ssh | xargs shred -u", Decision.DENY, "fs.rm-protected"),
    ("find /scratch/alice -mtime +30 | xargs unlink", Decision.DENY, "fs.rm-protected"),
    ("find /project/shared | xargs rm", Decision.ASK, "fs.rm-shared"),
    ("find ~/proj | xargs -I{} shred {}", Decision.ASK, "fs.rm-wide"),
    ("find ~/proj -exec shred {} +", Decision.ASK, "fs.rm-wide"),
]
ALLOWED = [
    "find . -name '*.pyc' | xargs rm",
    "find . -name '*.tmp' | xargs rm -f",
    "find . -name '*.pyc' -delete",
    "find ~ -type f | xargs ls -la",
    "find ~ -print0 | xargs -0 grep -l foo",
    "find ./build | xargs rm",
    "find . -delete",
]


@pytest.mark.parametrize(("command", "decision", "rule"), STOPPED)
def test_find_piped_to_a_deleter_is_stopped_like_exec(command: str, decision: Decision, rule: str) -> None:
    verdict = check(command, corpus_context())
    assert (verdict.decision, verdict.rule) == (decision, rule), command


@pytest.mark.parametrize("command", ALLOWED)
def test_filtered_or_harmless_find_pipe_is_allowed(command: str) -> None:
    assert check(command, corpus_context()).decision is Decision.ALLOW, command
