"""A gateway SIGKILLed at chosen moments of an array's life: no task lost or run twice, one end per job.

Moments (embedded backend; mid hand-over of a Slurm array: tests/slurm/test_array_kills_slurm.py): at each stage of
the array's own end (its state is stored before `_finish`; the end-path points are hit once per task first, so
hit `TASKS + 1` is the array's), and mid cancel (`before_backend_cancel:n`: n-1 tasks asked, the
n-th stored, the rest not reached). After a restart: every task ran exactly once (or never, when cancelled),
and the array and each task have exactly one terminal `job.state` and one `job.report` event.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from fault_helpers import raw_request, until

pytestmark = pytest.mark.slow

TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "DEPENDENCY_NEVER_SATISFIED"}
TASKS = 6


def _died(gw: Any) -> None:
    until(lambda: gw.proc.poll() is not None, timeout=120, what="the gateway to die at its kill point")
    assert gw.proc.returncode == -9


def _each_once(gw: Any, parent: int, tasks: list[int], state: str) -> None:
    res = gw.client.wait([parent, *tasks], "all", 180)
    assert res["done"], res["pending"]
    events = list(gw.client.events(since=0))
    for job_id in [parent, *tasks]:
        mine = [e for e in events if e["job_id"] == job_id]
        terminal = [e for e in mine if e["kind"] == "job.state" and e["data"].get("state") in TERMINAL]
        reports = [e for e in mine if e["kind"] == "job.report"]
        assert len(terminal) == 1, (job_id, [e["data"] for e in terminal])
        assert len(reports) == 1, (job_id, len(reports))
        assert terminal[0]["data"]["state"] == gw.client.report(job_id)["state"] == state, job_id


def _array(gw: Any, runs: Path, size: int, sleep: str = "0.2") -> tuple[int, list[int]]:
    cmd = f"echo $FRONTDESK_ARRAY_TASK_ID >> '{runs}'; sleep {sleep}"
    parent = gw.client.submit(spec={"command": ["sh", "-c", cmd], "array": f"0-{size - 1}"})["id"]
    tasks = [t["id"] for t in gw.client.request("GET", f"/v1/jobs?array={parent}")]
    assert len(tasks) == size
    return parent, tasks


@pytest.mark.parametrize("point", ["after_report_built", "after_report_stored"])
def test_killed_at_the_arrays_own_end_it_ends_once(gateway_factory: Any, tmp_path: Path, point: str) -> None:
    gw = gateway_factory(env={"FRONTDESK_PLUGINS": "none", "FRONTDESK_FAULT": f"{point}:{TASKS + 1}"})
    runs = tmp_path / "runs"
    parent, tasks = _array(gw, runs, TASKS)
    _died(gw)
    gw.env.pop("FRONTDESK_FAULT")
    gw.start()
    _each_once(gw, parent, tasks, "COMPLETED")
    gw.kill9()  # a further restart tells nothing again
    gw.start()
    _each_once(gw, parent, tasks, "COMPLETED")
    assert Counter(runs.read_text().split()) == Counter(str(i) for i in range(TASKS))


def test_killed_mid_array_cancel_every_task_is_cancelled(gateway_factory: Any, tmp_path: Path) -> None:
    fault = {"FRONTDESK_PLUGINS": "none", "FRONTDESK_FAULT": "before_backend_cancel:3"}
    gw = gateway_factory(env=fault, config=f"[local]\ncpus = {TASKS}\n")
    marker = tmp_path / "ended"
    cmd = f"sleep 120; touch '{marker}'-$FRONTDESK_ARRAY_TASK_ID"
    parent = gw.client.submit(spec={"command": ["sh", "-c", cmd], "array": f"0-{TASKS - 1}"})["id"]
    tasks = [t["id"] for t in gw.client.request("GET", f"/v1/jobs?array={parent}")]
    for task in tasks:
        gw.wait_state(task, {"RUNNING"}, timeout=120)
    with contextlib.suppress(OSError, ValueError, IndexError):
        raw_request(gw.socket, "POST", f"/v1/jobs/{parent}/cancel", b"{}")
    _died(gw)
    gw.env.pop("FRONTDESK_FAULT")
    gw.start()
    _each_once(gw, parent, tasks, "CANCELLED")
    assert not list(tmp_path.glob("ended-*"))
