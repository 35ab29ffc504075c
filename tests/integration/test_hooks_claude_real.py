"""The real Claude Code binary (npm @anthropic-ai/claude-code, pinned in tests/harness/node/package.json),
run headless against a loopback stand-in of the Messages API, with the hooks that
`frontdesk hooks install claude` wrote: the Stop hook holds the turn while the job runs and the job's
report reaches the model in the next request.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
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


def _claude_env(base: dict[str, str], url: str, tmp_path: Path, path: str | None = None) -> dict[str, str]:
    """The binary's environment: the stand-in API, a fresh HOME, `frontdesk` on PATH (project hooks)."""
    env = {
        **base,
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "sk-test",
        "HOME": str(tmp_path / "home"),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "PATH": path if path is not None else f"{Path(sys.executable).parent}{os.pathsep}{base.get('PATH', '')}",
    }
    for key in ("CLAUDE_CODE_SESSION_ID", "CLAUDECODE", "FRONTDESK_SESSION"):
        env.pop(key, None)
    return env


def test_stop_hook_brings_the_report_to_the_model(gateway_factory: Any, claude_bin: Path, tmp_path: Path) -> None:
    gw = gateway_factory(config="[agents]\nbatch_window_s = 0.5\n")
    project = tmp_path / "project"
    project.mkdir()
    res = gw.cli("hooks", "install", "claude", "--project", "--dir", str(project))
    assert res.returncode == 0, res.stderr
    marker = f"result-{uuid.uuid4().hex[:8]}"
    submit = f"{_frontdesk_exe()} run --name e2e -- sh -c 'sleep 2; echo {marker}'"
    script = [("bash", submit), ("text", "Submitted; I will stop here."), ("text", "Read the report.")]
    with MessagesStandIn(script) as api:
        env = _claude_env(gw.env, api.url, tmp_path)
        argv = [str(claude_bin), "-p", "train the model", "--allowedTools", "Bash", "--output-format", "json"]
        run = subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads(run.stdout)
    sid = result["session_id"]
    loop = api.loop_requests
    assert len(loop) == 3, [MessagesStandIn.last_user_text(b)[:200] for b in loop]
    job, note = MessagesStandIn.last_user_text(loop[1]).strip().split("\n")  # the id, and how it comes back
    assert job.isdigit()
    assert (
        note
        == f"frontdesk: job {job}: the report comes back by the Stop hook when this turn ends (or at the next prompt)"
    )
    after_stop = MessagesStandIn.last_user_text(loop[2])
    assert "Stop hook" in after_stop
    assert f"[frontdesk] job you submitted ended: {job} (e2e) COMPLETED" in after_stop
    assert marker in after_stop
    assert result["result"] == "Read the report."
    s = gw.client.request("GET", f"/v1/sessions/{sid}")
    # SessionEnd ran when -p exited
    assert s["harness"] == "claude-code" and s["unread"] == 0 and s["turn_state"] == "ended"
    wakes = [e["data"] for e in gw.client.events(since=0) if e["kind"] == "session.wake"]
    assert len(wakes) == 1 and wakes[0]["ok"] and wakes[0]["channel"] == "hooks:Stop"
    assert os.path.exists(project / ".claude" / "settings.json")


def _hook_outcomes(stdout: str) -> list[tuple[str, int, str]]:
    """(hook name, exit code, outcome) of every hook run, from `--output-format stream-json`."""
    out = []
    for line in stdout.splitlines():
        ev = json.loads(line) if line.startswith("{") else {}
        if ev.get("subtype") == "hook_response":
            out.append((ev["hook_name"], ev["exit_code"], ev["outcome"]))
    return out


def test_project_hooks_are_silent_on_a_machine_without_frontdesk(
    gateway_factory: Any, claude_bin: Path, tmp_path: Path
) -> None:
    """Issue 19, defect 3: the committed settings run `frontdesk` from PATH and do nothing without it."""
    gw = gateway_factory()
    project = tmp_path / "project"
    project.mkdir()
    assert gw.cli("hooks", "install", "claude", "--project", "--dir", str(project)).returncode == 0
    settings = (project / ".claude" / "settings.json").read_text()
    assert sys.prefix not in settings
    with MessagesStandIn([("bash", "echo hello"), ("text", "done")]) as api:
        env = _claude_env(gw.env, api.url, tmp_path, path="/usr/bin:/bin")  # a colleague's machine
        argv = [str(claude_bin), "-p", "hi", "--allowedTools", "Bash", "--output-format", "stream-json"]
        argv += ["--verbose", "--include-hook-events"]
        run = subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-2000:]
    outcomes = _hook_outcomes(run.stdout)
    names = {name.split(":")[0] for name, _, _ in outcomes}
    assert {"SessionStart", "UserPromptSubmit", "PreToolUse", "Stop"} <= names
    assert all((code, outcome) == (0, "success") for _, code, outcome in outcomes), outcomes
    assert "hook" not in run.stderr.lower(), run.stderr  # SessionEnd's failure would be printed here


def _hooked_project(gateway_factory: Any, tmp_path: Path) -> tuple[Any, Path]:
    """A gateway, and a project where `frontdesk hooks install claude --project` wrote its hooks."""
    gw = gateway_factory(config="[agents]\nbatch_window_s = 0.5\n")
    project = tmp_path / "project"
    project.mkdir()
    assert gw.cli("hooks", "install", "claude", "--project", "--dir", str(project)).returncode == 0
    return gw, project


def test_a_report_read_with_run_wait_is_not_brought_again_by_the_stop_hook(
    gateway_factory: Any, claude_bin: Path, tmp_path: Path
) -> None:
    """Issue 19, defect 2: the model read the report in its Bash result; the Stop hook lets the turn end."""
    gw, project = _hooked_project(gateway_factory, tmp_path)
    marker = f"waited-{uuid.uuid4().hex[:8]}"
    script = [("bash", f"frontdesk run --wait -- sh -c 'sleep 1; echo {marker}'"), ("text", "Read it; done.")]
    with MessagesStandIn(script) as api:
        env = _claude_env(gw.env, api.url, tmp_path)
        argv = [str(claude_bin), "-p", "run it", "--allowedTools", "Bash", "--output-format", "json"]
        run = subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-2000:]
    loop = api.loop_requests
    assert marker in json.dumps(loop[1])  # the report came back as the Bash tool's result
    assert len(loop) == 2, [MessagesStandIn.last_user_text(b)[:300] for b in loop[2:]]  # and never again
    sid = json.loads(run.stdout)["session_id"]
    assert gw.client.request("GET", f"/v1/sessions/{sid}")["unread"] == 0


def _tool_results(body: dict[str, Any]) -> list[Any]:
    """The tool_result blocks' content of the last user message, as the model receives them."""
    msgs = [m for m in body.get("messages", []) if m.get("role") == "user"]
    content = msgs[-1].get("content") if msgs else None
    return [b.get("content") for b in content or [] if isinstance(b, dict) and b.get("type") == "tool_result"]


def test_mcp_report_reaches_the_model_as_readable_text_once(
    gateway_factory: Any, claude_bin: Path, tmp_path: Path
) -> None:
    """Issue 19, defect 4: the model gets the report text (no JSON in a string); it is not delivered again."""
    gw, project = _hooked_project(gateway_factory, tmp_path)
    mcp = {"mcpServers": {"frontdesk": {"command": sys.executable, "args": ["-m", "frontdesk.cli.main", "mcp"]}}}
    (project / "mcp.json").write_text(json.dumps(mcp))
    marker = f"mcp-line-{uuid.uuid4().hex[:8]}"
    submit = json.dumps({"name": "mcp__frontdesk__submit", "input": {"command": f"sh -c 'echo {marker}'"}})
    wait = json.dumps({"name": "mcp__frontdesk__wait", "input": {"job_ids": [1], "timeout_s": 60}})  # a fresh gateway
    script = [("tool", submit), ("tool", wait), ("text", "Read it; done.")]
    with MessagesStandIn(script) as api:
        env = _claude_env(gw.env, api.url, tmp_path)
        argv = [str(claude_bin), "-p", "run it", "--output-format", "json", "--mcp-config", str(project / "mcp.json")]
        argv += ["--allowedTools", "mcp__frontdesk__submit,mcp__frontdesk__wait"]
        run = subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-2000:]
    loop = api.loop_requests
    waited = _tool_results(loop[2])
    text = waited[0] if isinstance(waited[0], str) else "".join(b.get("text", "") for b in waited[0])
    assert text.startswith("frontdesk job 1: COMPLETED") and marker in text and "\n" in text
    assert not text.lstrip().startswith("{") and '"result"' not in text  # not JSON in a string
    assert len(loop) == 3  # the Stop hook did not bring it again
    sid = json.loads(run.stdout)["session_id"]
    assert gw.client.request("GET", f"/v1/sessions/{sid}")["unread"] == 0
