"""The polling shield on a root facility gateway on the Slurm lab: each user's squeue view shows others' jobs as
the real squeue does on this site (the lab has PrivateData=none), never their command, paths or frontdesk rows."""

from __future__ import annotations

import subprocess
import time
from typing import Any

import pytest
from facility_helpers import SYSTEM_PY, Facility, run_as

from frontdesk.backends.slurm.plugin import OTHERS_HIDDEN

pytestmark = pytest.mark.slurm

FACILITY_GATEWAY = 'backend = "slurm"\ntick_seconds = 1.0\nplugins = ["slurm"]\n'


@pytest.fixture(scope="module")
def lab_facility(slurm_lab: Any, facility: Facility) -> Facility:
    """The facility gateway, started after the lab is up (SLURM_CONF exported to it)."""
    return facility


def _view(fac: Facility, user: str) -> dict[str, Any]:
    status, view = fac.probe(user, [{"method": "GET", "path": "/v1/slurm/squeue?history=true"}])[0]
    assert status == 200, view
    out: dict[str, Any] = view
    return out


@pytest.fixture(scope="module")
def alices_job(lab_facility: Facility) -> dict[str, Any]:
    body = {"spec": {"command": ["sleep", "120"], "name": "fdh6-alice-secret-name"}, "context": {"cwd": "/tmp"}}
    status, job = lab_facility.probe("alice", [{"method": "POST", "path": "/v1/jobs", "body": body}])[0]
    assert status == 200, job
    root = lab_facility.root_client()
    for _ in range(600):
        rec = root.request("GET", f"/v1/jobs/{job['id']}")
        if rec.get("backend_id"):
            break
        time.sleep(0.05)
    assert rec.get("backend_id"), rec
    found: dict[str, Any] = rec
    return found


def test_others_see_the_job_as_squeue_shows_it_without_command_paths_or_frontdesk_rows(
    lab_facility: Facility, alices_job: dict[str, Any]
) -> None:
    bid = str(alices_job["backend_id"])
    mine, theirs = _view(lab_facility, "alice"), _view(lab_facility, "carol")
    own = next(r for r in mine["jobs"] if r["JobId"] == bid)
    assert own["UserId"].startswith("alice(") and {"Command", "WorkDir", "StdOut"} <= set(own)
    assert mine["frontdesk"].get(bid) == alices_job["id"]
    other = next(r for r in theirs["jobs"] if r["JobId"] == bid)  # PrivateData=none: squeue would list it
    assert other["UserId"].startswith("alice(") and other["JobState"] in ("PENDING", "RUNNING")
    assert not OTHERS_HIDDEN & set(other), other
    assert {k: v for k, v in own.items() if k not in OTHERS_HIDDEN} == other
    assert bid not in theirs["frontdesk"]
    assert all(h["principal"] == "carol" for h in theirs["history"])
    assert bid not in theirs["usage"]
    admin = _view(lab_facility, "fdadmin-user")
    assert next(r for r in admin["jobs"] if r["JobId"] == bid) == own  # admins see what squeue -a shows root


def test_the_squeue_shim_matches_the_real_squeue_for_others_jobs_minus_the_command(
    lab_facility: Facility, alices_job: dict[str, Any]
) -> None:
    bid = str(alices_job["backend_id"])
    fmt = "%i|%u|%j|%o"
    code = "import sys; from frontdesk.shims.squeue import main; sys.exit(main(sys.argv[1:]))"
    shim = run_as("carol", [SYSTEM_PY, "-c", code, "-h", "-j", bid, "-o", fmt], env=lab_facility.env())
    real = subprocess.run(
        ["runuser", "-u", "carol", "--", "squeue", "-h", "-j", bid, "-o", fmt], capture_output=True, text=True
    )
    assert shim.returncode == 0 == real.returncode, (shim.stderr, real.stderr)
    s_id, s_user, s_name, s_cmd = shim.stdout.strip().split("|")
    r_id, r_user, r_name, r_cmd = real.stdout.strip().split("|")
    assert (s_id, s_user, s_name) == (r_id, r_user, r_name) == (bid, "alice", r_name)
    # sbatch ran as alice with the script on its stdin: Slurm has no script path to show anyone; the shim none either
    assert r_cmd == "(null)" and "/" not in s_cmd, (r_cmd, s_cmd)
    lab_facility.probe("alice", [{"method": "POST", "path": f"/v1/jobs/{alices_job['id']}/cancel", "body": {}}])
