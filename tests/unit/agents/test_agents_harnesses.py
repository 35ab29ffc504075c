"""The harness adapters (issue 11): one module per harness behind one Protocol, found by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from frontdesk.agents.harnesses import ADAPTERS, HarnessAdapter, adapter, for_harness, names
from frontdesk.agents.harnesses.base import PORTABLE, HookPlan
from frontdesk.errors import UserError


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_every_adapter_meets_the_protocol(name: str) -> None:
    a = adapter(name)
    assert isinstance(a, HarnessAdapter) and a.name == name
    assert for_harness(a.harness) is not None and type(for_harness(a.harness)) is type(a)
    assert a.session_id({"session_id": "s-1"}) == "s-1"
    groups = a.entries(HookPlan(), PORTABLE)
    cmds = [h["command"] for gs in groups.values() for g in gs for h in g["hooks"]]
    assert cmds and all("exec frontdesk " in c for c in cmds)


def test_names_and_aliases() -> None:
    assert {"claude", "codex", "gemini"} <= set(names())
    assert adapter("claude-code").name == "claude" and adapter("gemini-cli").name == "gemini"
    with pytest.raises(UserError, match="unknown harness 'cursor'"):
        adapter("cursor")
    assert for_harness("other") is None


def test_detection_from_the_environment() -> None:
    assert adapter("claude").detect({"CLAUDE_CODE_SESSION_ID": "c1"}) == "c1"
    assert adapter("codex").detect({"CODEX_THREAD_ID": "t1"}) == "t1"
    assert adapter("gemini").detect({"GEMINI_CLI": "1"}) == ""  # under Gemini, session id unknown
    assert adapter("gemini").detect({}) is None and adapter("codex").detect({"GEMINI_CLI": "1"}) is None


def test_gemini_events_names_and_millisecond_timeouts() -> None:
    groups = adapter("gemini").entries(HookPlan(stop_timeout=900, quick_timeout=30), PORTABLE)
    assert set(groups) == {"SessionStart", "BeforeAgent", "AfterAgent", "SessionEnd"}
    stop = groups["AfterAgent"][0]["hooks"][0]
    assert stop["name"] == "frontdesk-stop" and stop["timeout"] == 900_000
    assert stop["command"].endswith("frontdesk hook stop --harness gemini --budget 880")


def test_settings_paths(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert adapter("gemini").settings_paths("project", tmp_path, home) == {
        "hooks": tmp_path / ".gemini" / "settings.json"
    }
    assert adapter("claude").settings_paths("user", tmp_path, home) == {"hooks": home / ".claude" / "settings.json"}


def test_output_shapes() -> None:
    got = {"delivery": True, "text": "[frontdesk] job ended", "jobs": [1]}
    for name in ("claude", "codex", "gemini"):
        out, err, code = adapter(name).render("Stop", got)
        assert json.loads(out) == {"decision": "block", "reason": "[frontdesk] job ended"} and code == 0
    ctx = json.loads(adapter("gemini").render("UserPromptSubmit", got)[0])["hookSpecificOutput"]
    assert ctx["hookEventName"] == "BeforeAgent" and ctx["additionalContext"].startswith("[frontdesk]")
    assert adapter("claude").render("rewake", got) == ("", "[frontdesk] job ended\n", 2)


def test_resume_commands() -> None:
    assert adapter("claude").resume_argv("s", "T") == ["claude", "-p", "T", "--resume", "s", "--output-format", "json"]
    assert adapter("codex").resume_argv("t", "T", "/opt/codex") == [
        "/opt/codex",
        "exec",
        "--skip-git-repo-check",
        "resume",
        "t",
        "T",
    ]
    assert adapter("gemini").resume_argv("g", "T") is None
