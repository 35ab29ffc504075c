"""A SIGKILL between a stored cancel and the backend's kill: after a restart the cancel still happens.

The gateway answers a cancel once `cancel_requested` is stored; it then asks the backend to kill the job.
Killed in between (kill point `before_backend_cancel`), the restarted gateway must finish what it promised:
the job (or every task of a cancelled array) ends CANCELLED instead of running to its end.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest
from fault_helpers import raw_request, until

pytestmark = pytest.mark.slow


def _cancel_and_die(gw: Any, job_id: int) -> None:
    with contextlib.suppress(OSError, ValueError, IndexError):
        raw_request(gw.socket, "POST", f"/v1/jobs/{job_id}/cancel", b"{}")
    until(lambda: gw.proc.poll() is not None, timeout=60, what="the gateway to die before the backend's cancel")
    assert gw.proc.returncode == -9


def test_a_cancel_cut_short_by_a_crash_still_kills_the_job(gateway_factory: Any, tmp_path: Path) -> None:
    gw = gateway_factory(env={"FRONTDESK_PLUGINS": "none", "FRONTDESK_FAULT": "before_backend_cancel"})
    marker = tmp_path / "ran-to-the-end"
    job = gw.client.submit(spec={"command": ["sh", "-c", f"sleep 120; touch '{marker}'"]})["id"]
    gw.wait_state(job, {"RUNNING"})
    _cancel_and_die(gw, job)
    gw.env.pop("FRONTDESK_FAULT")
    gw.start()
    done = gw.client.wait([job], "all", 60)
    assert done["done"], "the cancelled job still runs after the restart"
    assert gw.client.report(job)["state"] == "CANCELLED" and not marker.exists()


def test_an_array_cancel_cut_short_cancels_every_task(gateway_factory: Any, tmp_path: Path) -> None:
    gw = gateway_factory(
        env={"FRONTDESK_PLUGINS": "none", "FRONTDESK_FAULT": "before_backend_cancel"},
        config="[local]\ncpus = 4\n",
    )
    spec = {"command": ["sh", "-c", f"sleep 120; touch '{tmp_path}'/task-$FRONTDESK_ARRAY_TASK_ID"], "array": "0-2"}
    parent = gw.client.submit(spec=spec)["id"]
    tasks = [t["id"] for t in gw.client.request("GET", f"/v1/jobs?array={parent}")]
    assert len(tasks) == 3
    for task in tasks:
        gw.wait_state(task, {"RUNNING"})
    _cancel_and_die(gw, parent)
    gw.env.pop("FRONTDESK_FAULT")
    gw.start()
    done = gw.client.wait([parent, *tasks], "all", 60)
    assert done["done"], ("tasks still run after the restart", done["pending"])
    states = {i: gw.client.report(i)["state"] for i in [parent, *tasks]}
    assert set(states.values()) == {"CANCELLED"}, states
    assert not list(tmp_path.glob("task-*")), [gw.client.report(i)["text"] for i in tasks]
