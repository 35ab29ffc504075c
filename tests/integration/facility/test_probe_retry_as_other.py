"""`frontdesk retry` of another user's job never runs that user's command as whoever asked.

A retry is a new submission of the old job's spec by the caller: the command, script, environment and working
directory the OWNER chose, run as the CALLER. An admin (who may read every job) retrying a user's job ran the
user's code as the admin, with the user's environment: a user could leave a job for an admin to retry. Now
the CLI refuses a retry of a job that is not the caller's, with one line (exit 77), and submits nothing.
Real users and a root facility gateway; alice's job is a canary that only creates a file named after who ran it.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from facility_helpers import Facility

ADMIN = "fdadmin-user"


def test_an_admin_retrying_a_users_job_runs_nothing_as_the_admin(facility: Facility) -> None:
    sandbox = Path(tempfile.mkdtemp(prefix="fdprobe-retry-", dir="/tmp"))
    sandbox.chmod(0o777)
    try:
        spec = {"command": ["sh", "-c", f'touch "{sandbox}/ran-as-$(id -un)"'], "name": "fdprobe-retry"}
        body = {"spec": spec, "context": {"cwd": str(sandbox)}}
        status, job = facility.probe("alice", [{"method": "POST", "path": "/v1/jobs", "body": body}])[0]
        assert status == 200, job
        assert (
            facility.probe("alice", [{"method": "POST", "path": "/v1/wait", "body": {"ids": [job["id"]]}}])[0][0] == 200
        )
        assert (sandbox / "ran-as-alice").exists()
        since = facility.root_client().health()["last_seq"]
        r = facility.cli(ADMIN, "retry", str(job["id"]))
        assert r.returncode == 77, (r.returncode, r.stdout, r.stderr)
        assert r.stderr.count("\n") == 1 and "alice" in r.stderr, r.stderr
        time.sleep(1)
        assert sorted(p.name for p in sandbox.iterdir()) == ["ran-as-alice"]
        new = [e for e in facility.root_client().request("GET", f"/v1/events?since={since}&kind=job.submitted")]
        assert new == [], new
        # the owner still retries her own job
        r = facility.cli("alice", "retry", str(job["id"]))
        assert r.returncode == 0, r.stderr
    finally:
        shutil.rmtree(sandbox, ignore_errors=True)
