"""The guard asks before a job `kill`s a frontdesk job's or another user's process. A root gateway judged a pid as
root: it read the environment of any user's process (which only its owner may read) and told bob that alice's pid
"runs frontdesk job N" (her private job's id), and took every process not root's for someone else's, so bob's kill
of his own process was asked about as "another user's". Probe: alice's running job, bob's own process, and
`kill -0 PID` (signal 0: a canary that delivers nothing) submitted by each."""

from __future__ import annotations

import pwd
import subprocess
import time
from pathlib import Path
from typing import Any

from facility_helpers import Facility, user_env


def _pid_of(uid: int, needle: bytes) -> int | None:
    """The pid of a process of `uid` whose environment or command line holds `needle`."""
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if d.stat().st_uid != uid:
                continue
            if needle in (d / "environ").read_bytes() or needle in (d / "cmdline").read_bytes():
                return int(d.name)
        except OSError:
            continue
    return None


def _kill0(fac: Facility, user: str, pid: int) -> list[Any]:
    body = {"spec": {"command": ["kill", "-0", str(pid)]}, "context": {"cwd": "/tmp"}}
    [answer] = fac.probe(user, [{"method": "POST", "path": "/v1/jobs", "body": body}])
    return list(answer)


def test_a_pid_is_judged_as_its_submitter_would_see_it(facility: Facility) -> None:
    alice, bob = (pwd.getpwnam(u).pw_uid for u in ("alice", "bob"))
    spec = {"command": ["sleep", "60"]}
    [[status, job]] = facility.probe(
        "alice", [{"method": "POST", "path": "/v1/jobs", "body": {"spec": spec, "context": {"cwd": "/tmp"}}}]
    )
    assert status == 200, job
    own = subprocess.Popen(["runuser", "-u", "bob", "--", *user_env("bob"), "sleep", "61.4321"], cwd="/tmp")
    try:
        deadline = time.monotonic() + 30
        hers = mine = None
        while (hers is None or mine is None) and time.monotonic() < deadline:
            hers = hers or _pid_of(alice, f"FRONTDESK_JOB_ID={job['id']}\0".encode())
            mine = mine or _pid_of(bob, b"61.4321")
            time.sleep(0.1)
        assert hers is not None and mine is not None, (hers, mine)
        hers_as_alice = _kill0(facility, "alice", hers)  # her own job's process: `frontdesk cancel` is the way
        assert f"runs frontdesk job {job['id']}" in str(hers_as_alice), hers_as_alice
        at_hers = _kill0(facility, "bob", hers)
        assert f"pid {hers} belongs to alice" in str(at_hers), at_hers  # as `ps` shows it to him
        assert f"job {job['id']}" not in str(at_hers), at_hers  # her job's id was hers to know
        at_mine = _kill0(facility, "bob", mine)
        assert at_mine[0] == 200 and "belongs to" not in str(at_mine), at_mine  # his own process is his
    finally:
        own.terminate()
        own.wait(10)
        facility.probe("alice", [{"method": "POST", "path": f"/v1/jobs/{job['id']}/cancel"}])
