"""Issue 19, defect 6: the Stop hook holds an attended turn for a capped time, then the async wake
delivers; a new session in the same project is offered the reports of an ended one; an ended session
shows no live channel."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from test_hooks_agents import hook, session, start_payload, stop_payload  # noqa: E402


def _gw(gateway_factory: Any) -> Any:
    return gateway_factory(config="[agents]\nbatch_window_s = 0.3\nlease_s = 5\nstop_hold_s = 0.5\n")


def _submit(gw: Any, sid: str, flag: Path, cwd: Path | None = None, pid: int | None = None) -> int:
    env = {"CLAUDE_CODE_SESSION_ID": sid, "CLAUDECODE": "1", **({"FRONTDESK_AGENT_PID": str(pid)} if pid else {})}
    script = f"while [ ! -e '{flag}' ]; do sleep 0.1; done; echo done-{flag.name}"
    res = gw.cli("run", "--json", "--", "sh", "-c", script, env=env, cwd=cwd)
    assert res.returncode == 0, res.stderr
    return int(json.loads(res.stdout)["id"])


def test_an_attended_turn_is_held_only_for_the_cap_then_the_rewake_hook_delivers(
    gateway_factory: Any, tmp_path: Path
) -> None:
    gw = _gw(gateway_factory)
    sid, flag = str(uuid.uuid4()), tmp_path / "go"
    job = _submit(gw, sid, flag)
    stop = hook(gw, "stop", stop_payload(sid), "--budget", "600")
    assert (stop.returncode, stop.stdout) == (0, "")  # released with the job still running
    assert gw.client.job(job)["state"] == "RUNNING"
    assert session(gw, sid)["turn_state"] == "idle"
    rewake = hook(gw, "rewake", stop_payload(sid), "--budget", "60", background=True)
    flag.touch()
    out, err = rewake.communicate(timeout=60)
    assert rewake.returncode == 2 and f"{job} COMPLETED" in err and f"done-{flag.name}" in err


def test_an_unattended_turn_is_still_held_until_the_report(gateway_factory: Any, tmp_path: Path) -> None:
    gw = _gw(gateway_factory)
    sid, flag = str(uuid.uuid4()), tmp_path / "go"
    job = _submit(gw, sid, flag)
    p = hook(
        gw, "stop", stop_payload(sid), "--budget", "60", env={"CLAUDE_CODE_SESSION_ATTENDED": "0"}, background=True
    )
    time.sleep(1.5)  # three times the cap
    assert p.poll() is None
    flag.touch()
    out, _ = p.communicate(timeout=60)
    assert f"{job} COMPLETED" in json.loads(out)["reason"]


def test_a_new_session_in_the_project_is_offered_an_ended_sessions_reports(
    gateway_factory: Any, tmp_path: Path
) -> None:
    gw = _gw(gateway_factory)
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    agent = subprocess.Popen(["sleep", "300"])  # the first session's process
    old, flag = str(uuid.uuid4()), tmp_path / "go"
    job = _submit(gw, old, flag, cwd=project, pid=agent.pid)
    live = subprocess.Popen(["sleep", "300"])  # a session still running in the project keeps its reports
    kept, kept_flag = str(uuid.uuid4()), tmp_path / "go2"
    kept_job = _submit(gw, kept, kept_flag, cwd=project, pid=live.pid)
    agent.kill()
    agent.wait()
    flag.touch()
    kept_flag.touch()
    gw.wait_state(job, {"COMPLETED"})
    gw.wait_state(kept_job, {"COMPLETED"})
    deadline = time.monotonic() + 60  # the report reaches the session after the job's end
    while session(gw, old)["unread"] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    other = hook(gw, "session-start", {**start_payload(str(uuid.uuid4())), "cwd": str(elsewhere)})
    assert other.stdout == ""  # another project: nothing offered
    new = str(uuid.uuid4())
    res = hook(gw, "session-start", {**start_payload(new), "cwd": str(project)})
    ctx = json.loads(res.stdout)["hookSpecificOutput"]["additionalContext"]
    head = "[frontdesk] Reports below include jobs submitted by an earlier session in this project that has ended"
    assert ctx.startswith(f"{head}: {old} (jobs {job}).")
    assert f"done-{flag.name}" in ctx and f"done-{kept_flag.name}" not in ctx
    assert session(gw, old)["unread"] == 0 and session(gw, new)["unread"] == 0
    assert session(gw, kept)["unread"] == 1
    live.kill()
    live.wait()


def test_an_ended_session_shows_no_live_channel(gateway_factory: Any, tmp_path: Path) -> None:
    gw = _gw(gateway_factory)
    sid = str(uuid.uuid4())
    sock = tmp_path / "tmux.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # a real socket of ours: the channel checks both
    listener.bind(str(sock))
    reach = {"pid": os.getpid(), "tmux_socket": str(sock), "tmux_pane": "%1"}
    gw.client.request("POST", "/v1/sessions", {"session": sid, "harness": "claude-code", "reach": reach})
    before = session(gw, sid)
    listener.close()
    assert before["channel"] == "tmux"
    hook(gw, "session-end", {"session_id": sid, "cwd": "/tmp", "hook_event_name": "SessionEnd"})
    after = session(gw, sid)
    assert after["turn_state"] == "ended" and after["channel"] is None
    assert "tmux: session ended" in " ".join(after["channels"])
    listed = gw.cli("sessions", "--json")
    assert [s["channel"] for s in json.loads(listed.stdout) if s["id"] == sid] == [None]
    row = next(line for line in gw.cli("sessions").stdout.splitlines() if line.startswith(sid[:13]))
    assert row.split()[1:3] == ["claude-code", "ended"] and row.split()[5] == "-"  # no channel shown
