"""Headless resume of a session that is not running, with stand-in `claude` / `codex` on PATH.

The stand-ins (tests/harness/standins) record the arguments they were given; the real binaries would
need the network. The gateway starts them only with `[agents] allow_headless = true`, only for a
session whose process is gone (SessionEnd), and a failed resume is retried: nothing is lost.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from gateway_helpers import session_when

STANDINS = Path(__file__).resolve().parents[1] / "harness" / "standins"


@pytest.fixture
def record(tmp_path: Path) -> Path:
    return tmp_path / "calls.jsonl"


def _gw(gateway_factory: Any, record: Path, allow: bool = True, exit_code: int = 0) -> Any:
    cfg = f"[agents]\nallow_headless = {'true' if allow else 'false'}\nbatch_window_s = 0.3\nretry_max_s = 1\n"
    env = {
        "PATH": f"{STANDINS}{os.pathsep}{os.environ['PATH']}",
        "STANDIN_RECORD": str(record),
        "STANDIN_EXIT": str(exit_code),
    }
    return gateway_factory(config=cfg, env=env)


def _calls(record: Path, n: int = 1, timeout: float = 60) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if record.exists():
            lines = [json.loads(x) for x in record.read_text().splitlines() if x.strip()]
            if len(lines) >= n:
                return lines
        time.sleep(0.05)
    return [json.loads(x) for x in record.read_text().splitlines()] if record.exists() else []


def _end_session(gw: Any, sid: str, harness: str, cwd: Path) -> None:
    payload = {"session_id": sid, "cwd": str(cwd), "hook_event_name": "SessionEnd", "reason": "exit"}
    res = gw.cli("hook", "session-end", "--harness", harness, input=json.dumps(payload))
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("harness,env_key", [("claude-code", "CLAUDE_CODE_SESSION_ID"), ("codex", "CODEX_THREAD_ID")])
def test_an_ended_session_is_resumed_headless_with_the_report(
    gateway_factory: Any, record: Path, workdir: Path, harness: str, env_key: str
) -> None:
    gw = _gw(gateway_factory, record)
    sid = str(uuid.uuid4())
    res = gw.cli(
        "run",
        "--json",
        "--",
        "sh",
        "-c",
        "sleep 1; echo headless-result",
        env={env_key: sid, "CLAUDECODE": "1" if harness == "claude-code" else ""},
        cwd=workdir,
    )
    job = json.loads(res.stdout)["id"]
    _end_session(gw, sid, harness, workdir)
    calls = _calls(record)
    assert len(calls) == 1
    call = calls[0]
    assert call["cwd"] == str(workdir) and call["session_env"] == sid
    if harness == "claude-code":
        assert call["argv0"] == "claude"
        assert call["args"][0] == "-p" and call["args"][2:] == ["--resume", sid, "--output-format", "json"]
        text = call["args"][1]
    else:
        assert call["argv0"] == "codex"
        assert call["args"][:4] == ["exec", "--skip-git-repo-check", "resume", sid]
        text = call["args"][4]
    assert text.startswith(f"[frontdesk] job you submitted ended: {job} COMPLETED.")
    assert "headless-result" in text
    s = session_when(gw, sid, lambda s: s["unread"] == 0)  # acknowledged once the resume exited 0
    assert s["last_channel"] == "headless"
    time.sleep(1.0)
    assert len(_calls(record, timeout=0)) == 1  # exactly once


def test_headless_is_off_unless_the_site_allows_it(gateway_factory: Any, record: Path, workdir: Path) -> None:
    gw = _gw(gateway_factory, record, allow=False)
    sid = str(uuid.uuid4())
    res = gw.cli("run", "--json", "--", "echo", "x", env={"CLAUDE_CODE_SESSION_ID": sid, "CLAUDECODE": "1"})
    job = json.loads(res.stdout)["id"]
    _end_session(gw, sid, "claude-code", workdir)
    gw.wait_state(job, {"COMPLETED"})
    s = session_when(gw, sid, lambda s: s["unread"] == 1)  # the report reaches the session after the end
    assert s["unread"] == 1
    time.sleep(1.0)  # a resume would have been called by now
    assert not record.exists()
    s = gw.client.request("GET", f"/v1/sessions/{sid}")
    assert s["unread"] == 1
    assert "allow_headless" in " ".join(s["channels"])


def test_a_failed_resume_is_retried_and_not_acknowledged(gateway_factory: Any, record: Path, workdir: Path) -> None:
    gw = _gw(gateway_factory, record, exit_code=1)
    sid = str(uuid.uuid4())
    gw.cli("run", "--", "echo", "x", env={"CLAUDE_CODE_SESSION_ID": sid, "CLAUDECODE": "1"})
    _end_session(gw, sid, "claude-code", workdir)
    calls = _calls(record, n=2)
    assert len(calls) >= 2  # retried with backoff
    s = gw.client.request("GET", f"/v1/sessions/{sid}")
    assert s["unread"] == 1
    wakes = [e["data"] for e in gw.client.events(since=0) if e["kind"] == "session.wake"]
    assert wakes and not wakes[0]["ok"] and wakes[0]["channel"] == "headless"
