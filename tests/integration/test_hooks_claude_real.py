"""The real Claude Code binary (npm @anthropic-ai/claude-code, pinned in tests/harness/node/package.json),
run headless against a loopback stand-in of the Messages API, with the hooks that
`frontdesk hooks install claude` wrote: the Stop hook holds the turn while the job runs and the job's
report reaches the model in the next request.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

HARNESS = Path(__file__).resolve().parents[1] / "harness"
NODE = HARNESS / "node"
sys.path.insert(0, str(HARNESS))

from anthropic_standin import MessagesStandIn  # noqa: E402

pytestmark = [pytest.mark.harness, pytest.mark.slow]


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    """The pinned binary, installed into tests/harness/node when missing."""
    exe = NODE / "node_modules" / ".bin" / "claude"
    if not exe.exists():
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("npm is not installed: cannot install @anthropic-ai/claude-code")
        subprocess.run(
            [npm, "ci", "--prefix", str(NODE), "--no-audit", "--no-fund"], check=True, capture_output=True, timeout=600
        )
    out = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60)
    assert out.stdout.startswith("2.1.332"), out.stdout + out.stderr
    return exe


def _frontdesk_exe() -> str:
    beside = Path(sys.executable).parent / "frontdesk"
    return str(beside) if beside.exists() else "frontdesk"


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
        env = {
            **gw.env,
            "ANTHROPIC_BASE_URL": api.url,
            "ANTHROPIC_API_KEY": "sk-test",
            "HOME": str(tmp_path / "home"),
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }
        env.pop("CLAUDE_CODE_SESSION_ID", None)
        env.pop("CLAUDECODE", None)
        argv = [str(claude_bin), "-p", "train the model", "--allowedTools", "Bash", "--output-format", "json"]
        run = subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads(run.stdout)
    sid = result["session_id"]
    loop = api.loop_requests
    assert len(loop) == 3, [MessagesStandIn.last_user_text(b)[:200] for b in loop]
    job = MessagesStandIn.last_user_text(loop[1]).strip()  # `frontdesk run` prints the job id
    assert job.isdigit()
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
