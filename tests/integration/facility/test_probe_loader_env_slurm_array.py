"""An array (one `sbatch --array` for all its tasks) goes the same way as a single job on a root facility gateway: its
environment (LD_PRELOAD, PYTHONPATH) reaches each task, as the user, and no root process runs with it (sbatch
runs as the user). The single-job path was probed before (test_probe_loader_env_slurm.py);
this is the array's own submission path (backends/slurm/array_submit.py). Canary as there: a shared object and
a sitecustomize.py that only create an empty file named after their effective uid."""

from __future__ import annotations

from typing import Any

import pytest
from facility_helpers import Facility
from loader_canary import USER, Canary, assert_only_the_user_ran_it, canary_fixture  # noqa: F401

pytestmark = pytest.mark.slurm

FACILITY_GATEWAY = 'backend = "slurm"\ntick_seconds = 1.0\nplugins = ["slurm"]\n'


def test_an_arrays_loader_variables_reach_its_tasks_but_no_root_process(
    slurm_lab: Any, facility: Facility, canary: Canary
) -> None:
    work = str(canary.dir / "work")
    spec = {"command": ["sh", "-c", 'echo "LD=$LD_PRELOAD"'], "workdir": work, "array": "0-1"}
    body = {"spec": spec, "context": {"cwd": work, "env": {"PATH": "/usr/bin:/bin", **canary.env}}}
    [[status, rec]] = facility.probe(USER, [{"method": "POST", "path": "/v1/jobs", "body": body}])
    assert status == 200, rec
    got = facility.ended(rec["id"])
    assert got["state"] == "COMPLETED", (canary.ran(), got)
    [[status, tasks]] = facility.probe(USER, [{"method": "GET", "path": f"/v1/jobs?array={rec['id']}&tasks=true"}])
    assert status == 200 and len(tasks) == 2, tasks
    logs = facility.probe(USER, [{"method": "GET", "path": f"/v1/jobs/{t['id']}/logs?tail=50"} for t in tasks])
    for status, answer in logs:
        assert status == 200, answer
        assert_only_the_user_ran_it(canary, answer["lines"])
