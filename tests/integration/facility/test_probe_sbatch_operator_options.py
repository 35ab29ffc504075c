"""A root facility gateway submits each Slurm job with `sbatch --uid=U` as root, and slurmctld takes what root asks
as an operator's request: a negative `--nice` (Slurm answers a user's own `sbatch --nice=-50` with "Invalid --nice
value") was accepted for bob's job, ahead of everyone's, and `--reboot` (root, SlurmUser and admins only) would
reboot nodes where the site has a RebootProgram. Such pass-through options are refused with one line and nothing
is stored; a positive nice (lowering one's own job) still passes. Probe on the Slurm lab, held jobs only."""

from __future__ import annotations

import os
import subprocess
from typing import Any

import pytest
from facility_helpers import Facility

pytestmark = pytest.mark.slurm

FACILITY_GATEWAY = 'backend = "slurm"\ntick_seconds = 1.0\nplugins = ["slurm"]\n'


def _submit(fac: Facility, options: list[str]) -> list[Any]:
    spec = {"command": ["true"], "slurm": {"options": ["--hold", *options]}}
    [answer] = fac.probe(
        "bob", [{"method": "POST", "path": "/v1/jobs", "body": {"spec": spec, "context": {"cwd": "/tmp"}}}]
    )
    return list(answer)


def _nice_of(fac: Facility, job_id: int) -> str:
    """The Slurm job's Nice, as slurmctld holds it (root's scontrol)."""
    rec = fac.root_client().request("GET", f"/v1/jobs/{job_id}")
    bid = str(rec.get("backend_id") or "")
    assert bid.isdigit(), rec
    out = subprocess.run(["scontrol", "show", "job", bid], capture_output=True, text=True, env=os.environ, timeout=30)
    return next(w.split("=", 1)[1] for w in out.stdout.split() if w.startswith("Nice="))


def test_operator_only_sbatch_options_are_refused(slurm_lab: Any, facility: Facility) -> None:
    for options in (["--nice=-50"], ["--nice=-1"], ["--reboot"]):
        status, message = _submit(facility, options)
        assert status == "bad_spec" and options[0].split("=")[0] in message, (options, status, message)
        assert "\n" not in message
    status, job = _submit(facility, ["--nice=5"])
    assert status == 200, job
    try:
        assert _nice_of(facility, job["id"]) == "5"
    finally:
        facility.probe("bob", [{"method": "POST", "path": f"/v1/jobs/{job['id']}/cancel"}])
