"""A report the owning session already read (`run --wait`, `wait`, `report`) is delivered, and the Stop
hook does not bring it again (issue 19, defect 2); `frontdesk run` says how the report will come back."""

from __future__ import annotations

import json
import sys
import uuid
from typing import Any

import pytest

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from test_hooks_agents import CONFIG, hook, session, stop_payload  # noqa: E402


@pytest.fixture
def gw(gateway_factory: Any) -> Any:
    return gateway_factory(config=CONFIG)


def _env(sid: str) -> dict[str, str]:
    return {"CLAUDE_CODE_SESSION_ID": sid, "CLAUDECODE": "1"}


def _read_by(gw: Any, sid: str, how: str) -> int:
    """Run a job and read its report the way `how` says; the job id."""
    if how == "run":
        res = gw.cli("run", "--wait", "--json", "--", "sh", "-c", "echo read-it", env=_env(sid))
        assert res.returncode == 0, res.stderr
        return int(json.loads(res.stdout)["job"]["id"])
    res = gw.cli("run", "--json", "--", "sh", "-c", "echo read-it", env=_env(sid))
    job = int(json.loads(res.stdout)["id"])
    gw.wait_state(job, {"COMPLETED"})
    if how == "wait":
        got = gw.cli("wait", str(job), env=_env(sid))
    else:
        got = gw.cli("report", str(job), env=_env(sid))
    assert got.returncode == 0 and "read-it" in got.stdout, got.stderr
    return job


@pytest.mark.parametrize("how", ["run", "wait", "report"])
def test_a_report_read_by_the_session_is_not_delivered_again(gw: Any, how: str) -> None:
    sid = str(uuid.uuid4())
    job = _read_by(gw, sid, how)
    s = session(gw, sid)
    assert s["unread"] == 0
    stop = hook(gw, "stop", stop_payload(sid), "--budget", "30")
    assert (stop.returncode, stop.stdout) == (0, "")  # the turn ends: nothing to hand over
    wakes = [e["data"] for e in gw.client.events(since=0) if e["kind"] == "session.wake" and e["session"] == sid]
    assert wakes == [{"channel": f"read:{how}", "jobs": [job], "ok": True}]


def test_reading_another_sessions_report_marks_nothing(gw: Any) -> None:
    mine, other = str(uuid.uuid4()), str(uuid.uuid4())
    res = gw.cli("run", "--json", "--", "sh", "-c", "echo theirs", env=_env(other))
    job = int(json.loads(res.stdout)["id"])
    gw.wait_state(job, {"COMPLETED"})
    hook(gw, "session-start", {"session_id": mine, "cwd": "/tmp", "hook_event_name": "SessionStart"})
    assert gw.cli("report", str(job), env=_env(mine)).returncode == 0
    stop = hook(gw, "stop", stop_payload(other), "--budget", "30")
    assert "theirs" in json.loads(stop.stdout)["reason"]  # still delivered to its own session


def test_run_says_how_the_report_will_come_back(gw: Any) -> None:
    sid = str(uuid.uuid4())
    first = gw.cli("run", "--", "true", env=_env(sid))
    assert "cannot come back by itself" in first.stderr and "frontdesk doctor" in first.stderr
    hook(gw, "session-start", {"session_id": sid, "cwd": "/tmp", "hook_event_name": "SessionStart"})
    second = gw.cli("run", "--", "true", env=_env(sid))
    job = second.stdout.strip()
    assert second.stderr == f"frontdesk: job {job}: the report comes back by the Stop hook when this turn ends " + (
        "(or at the next prompt)\n"
    )
    assert gw.cli("run", "--", "true").stderr == ""  # outside an agent session: nothing to say
