"""A gateway SIGKILLed mid hand-over of a Slurm array: after a restart each task ran once, under one sbatch.

The array is one `sbatch --array`; the gateway then stores each task's Slurm id. Killed at
`array_task_launched:n` (n ids stored, the others' not), the restarted gateway must find the other tasks by their
keys, submit nothing again, and end the array and each task exactly once (one terminal state, one report).
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "faults"))
from fault_helpers import until  # noqa: E402

pytestmark = pytest.mark.slurm

TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "DEPENDENCY_NEVER_SATISFIED"}
TASKS = 6


def test_killed_mid_hand_over_every_task_runs_once(slurm_lab: Path, gateway_factory: Any, tmp_path: Path) -> None:
    config = (
        '[gateway]\nbackend = "slurm"\ntick_seconds = 1.0\nplugins = ["slurm"]\n'
        '[slurm]\nrefresh_seconds = 1.0\npartition = "test"\n'
    )
    env = {"SLURM_CONF": str(slurm_lab / "etc" / "slurm.conf"), "FRONTDESK_FAULT": "array_task_launched:2"}
    gw = gateway_factory(config=config, env=env)
    runs = tmp_path / "runs"
    cmd = f"echo $FRONTDESK_ARRAY_TASK_ID >> '{runs}'"
    spec = {"command": ["sh", "-c", cmd], "array": f"0-{TASKS - 1}", "workdir": str(tmp_path)}
    parent = gw.client.submit(spec=spec)["id"]
    until(lambda: gw.proc.poll() is not None, timeout=120, what="the gateway to die mid hand-over")
    assert gw.proc.returncode == -9
    gw.env.pop("FRONTDESK_FAULT")
    gw.start()
    tasks = sorted(t["id"] for t in gw.client.request("GET", f"/v1/jobs?array={parent}"))
    res = gw.client.wait([parent, *tasks], "all", 180)
    assert res["done"], res["pending"]
    events = list(gw.client.events(since=0))
    for job_id in [parent, *tasks]:
        mine = [e for e in events if e["job_id"] == job_id]
        terminal = [e for e in mine if e["kind"] == "job.state" and e["data"].get("state") in TERMINAL]
        reports = [e for e in mine if e["kind"] == "job.report"]
        assert len(terminal) == 1 and len(reports) == 1, (job_id, [e["data"] for e in terminal], len(reports))
        assert terminal[0]["data"]["state"] == "COMPLETED", (job_id, gw.client.report(job_id)["text"])
    assert Counter(runs.read_text().split()) == Counter(str(i) for i in range(TASKS))
    every = subprocess.run(["scontrol", "-o", "show", "job"], capture_output=True, text=True, env=gw.env).stdout
    ours = [line for line in every.splitlines() if f"WorkDir={gw.home}/" in line]  # sbatch ran in the array dir
    arrays = {line.split("ArrayJobId=")[1].split()[0] for line in ours if "ArrayJobId=" in line}
    assert len(ours) == TASKS and len(arrays) == 1, ours  # one sbatch: nothing handed over a second time
    (slurm_array,) = arrays
    assert [gw.client.job(t)["backend_id"] for t in tasks] == [f"{slurm_array}_{i}" for i in range(TASKS)]
