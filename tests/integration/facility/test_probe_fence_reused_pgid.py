"""Fencing a lost attempt never signals another user's process group that took its stale process group id.

When an attempt's shepherd dies, the gateway fences the attempt (kills whatever is left) before it calls it lost:
by its cgroup, its tag and its process group, whose id is the job's first pid, recorded in started.json. Before,
every process in that group was SIGKILLed whoever ran it; once the job's processes were gone the pid could be
reused, and another user's process group with that id was killed by root. Now the group counts only when its
leader, if alive, is the job's (the start time recorded with the pid) and only its members run by the job's user.

Real users and a root facility gateway: alice's job (`sleep`) loses its shepherd, its pid is freed, a `sleep` of
bob's is started (setsid) at that very pid (the kernel's ns_last_pid: a real pid reuse), then the gateway fences.
The canary is bob's harmless `sleep`: it must survive.
"""

from __future__ import annotations

import json
import os
import pwd
import signal
import subprocess
import time
from pathlib import Path

import pytest
from facility_helpers import Facility

NS_LAST_PID = Path("/proc/sys/kernel/ns_last_pid")


def _until(what: str, check: object, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _gone(pid: int) -> bool:
    return not Path(f"/proc/{pid}").exists()


def _dead(pid: int) -> bool:
    """Gone, or a zombie (the shepherd's parent, the stopped gateway, reaps it once it goes on)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _canary_at(pid: int, user: str) -> subprocess.Popen[bytes] | None:
    """bob's `sleep`, a process group leader, started at `pid` (None when another process took it first)."""
    pw = pwd.getpwnam(user)
    for _ in range(50):
        NS_LAST_PID.write_text(str(pid - 1))
        proc = subprocess.Popen(["sleep", "600"], user=pw.pw_uid, group=pw.pw_gid, start_new_session=True, cwd="/")
        if proc.pid == pid:
            return proc
        proc.kill()
        proc.wait()
    return None


@pytest.mark.parametrize("record", ["with the leader's start", "an older record: pid only"])
def test_a_fence_spares_another_users_group_at_the_stale_pgid(facility: Facility, record: str) -> None:
    if not NS_LAST_PID.exists() or facility.proc is None:
        pytest.skip("needs /proc/sys/kernel/ns_last_pid (root, CONFIG_CHECKPOINT_RESTORE)")
    body = {"spec": {"command": ["sleep", "600"]}, "context": {"cwd": "/tmp"}}
    status, rec = facility.probe("alice", [{"method": "POST", "path": "/v1/jobs", "body": body}])[0]
    assert status == 200, rec
    client = facility.root_client()
    _until("the job to run", lambda: client.job(rec["id"])["state"] == "RUNNING")
    adir = facility.dir / "home" / "local" / str(client.job(rec["id"])["backend_id"])
    _until("started.json", lambda: (adir / "started.json").exists())
    started = json.loads((adir / "started.json").read_text())
    job_pid, shepherd = int(started["pid"]), int((adir / "shepherd.pid").read_text().split()[0])
    assert os.stat(f"/proc/{job_pid}").st_uid == pwd.getpwnam("alice").pw_uid
    canary = None
    os.kill(facility.proc.pid, signal.SIGSTOP)  # the gateway sees the dead shepherd only once bob's group is there
    try:
        os.kill(shepherd, signal.SIGKILL)
        _until("the shepherd to die", lambda: _dead(shepherd))
        os.killpg(job_pid, signal.SIGKILL)  # the job's processes gone: its pid (and group id) free for reuse
        _until("the job's pid to be free", lambda: _gone(job_pid))
        canary = _canary_at(job_pid, "bob")
        if record.startswith("an older"):  # no start recorded: the members' uid alone tells
            started.pop("pid_start", None)
            (adir / "started.json").write_text(json.dumps(started))
    finally:
        os.kill(facility.proc.pid, signal.SIGCONT)
    if canary is None:
        pytest.skip(f"pid {job_pid} was taken by another process 50 times (a busy machine)")
    try:
        assert os.getpgid(canary.pid) == job_pid
        # result.json is written once the fence confirmed the attempt's processes gone (LocalBackend._write_lost)
        _until("the attempt to be fenced and called lost", lambda: (adir / "result.json").exists(), seconds=60)
        assert canary.poll() is None, "the fence killed bob's process group"
        assert os.stat(f"/proc/{canary.pid}").st_uid == pwd.getpwnam("bob").pw_uid
    finally:
        canary.kill()
        canary.wait()
        facility.probe("alice", [{"method": "POST", "path": f"/v1/jobs/{rec['id']}/cancel", "body": {}}])
