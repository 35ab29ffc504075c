"""The MLFQ on Slurm: a waiting agent job drops a level, and Slurm hears it as a larger Nice."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from frontdesk.backends.slurm.parse import parse_scontrol_jobs
from frontdesk.backends.slurm.render import nice_value

pytestmark = pytest.mark.slurm

CONFIG = """[gateway]
backend = "slurm"
tick_seconds = 1.0
plugins = ["policy", "slurm"]

[slurm]
directives = ["--begin=now+3600"]   # every job waits: only its priority can move

[policy.priority]
reprioritise_every = 1

[policy.priority.classes.agent]
drop_after = "2s"
"""


def _slurm_job(backend_id: str) -> dict[str, str]:
    out = subprocess.run(
        ["scontrol", "-o", "show", "job", backend_id], capture_output=True, text=True, check=True
    ).stdout
    return parse_scontrol_jobs(out)[0]


def test_without_configured_pools_jobs_go_to_slurms_default_partition(
    slurm_lab: Path, gateway_factory: Any, workdir: Path
) -> None:
    config = '[gateway]\nbackend = "slurm"\nplugins = ["policy", "slurm"]\n'
    gw = gateway_factory(config=config, env={"SLURM_CONF": str(slurm_lab / "etc" / "slurm.conf")})
    job = gw.client.submit(spec={"command": ["true"], "resources": {"walltime": "5m"}}, context={"cwd": str(workdir)})
    rep = gw.client.wait([job["id"]], "all", 120)["reports"][0]
    assert job["partition"] is None and rep["state"] == "COMPLETED"


def test_waiting_agent_job_drops_a_level_in_slurm(slurm_lab: Path, gateway_factory: Any, workdir: Path) -> None:
    gw = gateway_factory(config=CONFIG, env={"SLURM_CONF": str(slurm_lab / "etc" / "slurm.conf")})
    spec = {"command": ["true"], "type": "agent", "pool": "agent", "resources": {"cpus": 1, "walltime": "5m"}}
    job = gw.client.submit(spec=spec, context={"cwd": str(workdir)})
    try:
        assert job["job_class"] == "agent" and job["partition"] == "agent"
        entry = job["priority"]
        first = _slurm_job(job["backend_id"])
        shift = 5000 if os.geteuid() == 0 else 0  # a root gateway centres nice on 0 (direct submissions' level)
        assert first["JobState"] == "PENDING" and int(first["Nice"]) == nice_value(entry, shift)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            now = gw.client.job(job["id"])
            if now["priority"] < entry:
                break
            time.sleep(0.2)
        assert now["priority"] == entry - 1000, "the agent job did not drop a level after drop_after"
        assert int(_slurm_job(job["backend_id"])["Nice"]) == nice_value(entry - 1000, shift)
    finally:
        gw.client.cancel(job["id"])
