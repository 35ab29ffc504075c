"""A gateway SIGKILLed while an agent's rewake hook is parked on it: the report is told once, after the restart.

The real hook (as Claude Code runs it) long-polls the gateway for the session's reports. The gateway dies under
it; the job ends while it is down; after the restart the report reaches the session exactly once (by the parked
hook if it kept waiting, else by the next hook), never again after a further kill -9.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

CONFIG = "[agents]\nbatch_window_s = 0.5\nlease_s = 5\n"


def _hook(gw: Any, event: str, sid: str, budget: str) -> subprocess.Popen[str]:
    payload = {"session_id": sid, "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp", "hook_event_name": "Stop"}
    argv = [sys.executable, "-m", "frontdesk.cli.main", "hook", event, "--harness", "claude-code", "--budget", budget]
    proc = subprocess.Popen(
        argv, env=gw.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(payload))
    proc.stdin.close()
    return proc


def _done(proc: subprocess.Popen[str]) -> tuple[int, str]:
    assert proc.stdout is not None and proc.stderr is not None
    with proc.stdout, proc.stderr:
        err = proc.stderr.read()
        proc.stdout.read()
    return proc.wait(timeout=180), err


def test_a_report_is_told_once_across_a_kill_under_a_parked_hook(gateway_factory: Any, workdir: Path) -> None:
    gw = gateway_factory(config=CONFIG)
    sid = str(uuid.uuid4())
    res = gw.cli(
        *("run", "--json", "--name", "gated", "--", "sh", "-c", "while [ ! -e gate ]; do sleep 0.05; done"),
        cwd=workdir,
        env={"CLAUDE_CODE_SESSION_ID": sid, "CLAUDECODE": "1"},
    )
    assert res.returncode == 0, res.stderr
    job = json.loads(res.stdout)["id"]
    assert _done(_hook(gw, "stop", sid, "0"))[0] == 0
    parked = _hook(gw, "rewake", sid, "60")
    gw.wait_state(job, {"RUNNING"})
    gw.kill9()
    (workdir / "gate").touch()
    gw.start()
    rc, err = _done(parked)
    told = [err] if rc == 2 else []
    if not told:  # the parked hook gave up with the gateway: the next one tells it
        rc, err = _done(_hook(gw, "rewake", sid, "60"))
        assert rc == 2, err
        told.append(err)
    assert f"frontdesk job {job} (gated): COMPLETED" in told[0], told
    assert _done(_hook(gw, "rewake", sid, "0"))[0] == 0  # told once
    gw.kill9()
    gw.start()
    assert _done(_hook(gw, "rewake", sid, "0"))[0] == 0
    wakes = [e for e in gw.client.events(since=0) if e["kind"] == "session.wake" and e["session"] == sid]
    assert [w["data"]["jobs"] for w in wakes] == [[job]]
