"""The real Claude Code binary with `frontdesk guard hook` as its PreToolUse hook: a command the guard denies
never runs, the reason reaches the model, and the verdict lands in the gateway's journal with the session."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HARNESS = Path(__file__).resolve().parents[1] / "harness"
sys.path.insert(0, str(HARNESS))

from anthropic_standin import MessagesStandIn  # noqa: E402

pytestmark = [pytest.mark.harness, pytest.mark.slow]


def _frontdesk_exe() -> str:
    beside = Path(sys.executable).parent / "frontdesk"
    return str(beside) if beside.exists() else "frontdesk"


def test_guard_hook_denies_inside_claude_code(gateway_factory: Any, claude_bin: Path, tmp_path: Path) -> None:
    gw = gateway_factory()
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    settings = project / ".claude" / "settings.json"
    hook = {"type": "command", "command": f"{_frontdesk_exe()} guard hook"}
    settings.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [hook]}]}}))
    before = settings.read_text()
    # Harmless if it did run in this temp project, and exactly what agent.sandbox-widen is for.
    script = [
        ("bash", "echo '{}' > .claude/settings.json"),
        ("bash", "echo hello-from-bash"),
        ("text", "done"),
    ]
    with MessagesStandIn(script) as api:
        env = {
            **gw.env,
            "ANTHROPIC_BASE_URL": api.url,
            "ANTHROPIC_API_KEY": "sk-test",
            "HOME": str(tmp_path / "home"),
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }
        for key in ("CLAUDE_CODE_SESSION_ID", "CLAUDECODE"):
            env.pop(key, None)
        run = subprocess.run(
            [str(claude_bin), "-p", "tidy up", "--allowedTools", "Bash", "--output-format", "json"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
    assert run.returncode == 0, run.stderr[-2000:]
    assert settings.read_text() == before  # the denied command never ran
    loop = api.loop_requests
    assert len(loop) == 3
    denied = MessagesStandIn.last_user_text(loop[1])
    assert "agent.sandbox-widen" in denied
    assert "hello-from-bash" in MessagesStandIn.last_user_text(loop[2])  # an allowed command still runs
    sid = json.loads(run.stdout)["session_id"]
    [event] = gw.client.request("GET", "/v1/events?kind=guard.verdict")
    assert event["data"]["rule"] == "agent.sandbox-widen" and event["data"]["verdict"] == "deny"
    assert event["session"] == sid and event["data"]["source"] == "hook"
