"""Issue 12 item 1: a gateway SIGKILLed at each step of a job's end loses no report and tells no end twice.

The kill points are `frontdesk.faults` points in the gateway's end path (FRONTDESK_FAULT=<point>:<n>): the
gateway kills itself with SIGKILL at the n-th job end reaching that point, while jobs end together.
After a restart every job has exactly one report and one terminal event, ran once, and `report`/`wait`
answer at once.
"""

from __future__ import annotations

import json
import shlex
import signal
import time
from pathlib import Path
from typing import Any

import pytest

POINTS = ["after_state_stored", "after_report_built", "after_report_stored"]
TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "DEPENDENCY_NEVER_SATISFIED"}


@pytest.fixture(autouse=True)
def _core_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FRONTDESK_PLUGINS", "none")


def _wait_dead(gw: Any, timeout: float = 60) -> int:
    deadline = time.monotonic() + timeout
    while gw.proc.poll() is None:
        if time.monotonic() > deadline:
            raise AssertionError("the gateway was never killed at its fault point:\n" + gw.log()[-2000:])
        time.sleep(0.05)
    return int(gw.proc.returncode)


@pytest.mark.parametrize("point", POINTS)
def test_kill9_in_the_end_path_loses_no_report(gateway_factory: Any, workdir: Path, point: str) -> None:
    gw = gateway_factory(env={"FRONTDESK_FAULT": f"{point}:2"})
    runs = workdir / "runs"
    gate = workdir / "gate"
    ids = []
    for i in range(4):
        cmd = f"echo {i} >> {shlex.quote(str(runs))}; while [ ! -e {shlex.quote(str(gate))} ]; do sleep 0.02; done"
        spec = {"name": f"end{i}", "command": ["/bin/sh", "-c", cmd]}
        ids.append(gw.client.submit(spec=spec, context={"cwd": str(workdir)})["id"])
    dependent = gw.client.submit(
        spec={"depends_on": ids, "command": ["/bin/sh", "-c", "echo after"]}, context={"cwd": str(workdir)}
    )["id"]
    for job_id in ids[:2]:  # two cpus here: two run, two queue behind them
        gw.wait_state(job_id, {"RUNNING"})
    gate.touch()  # the running jobs end together; the second end to reach `point` kills the gateway
    assert _wait_dead(gw) == -signal.SIGKILL
    assert "Traceback" not in gw.log()

    gw.env.pop("FRONTDESK_FAULT")
    gw.start()
    res = gw.client.wait([*ids, dependent], "all", 60)
    assert res["done"], res
    for job_id in [*ids, dependent]:
        assert gw.client.report(job_id)["state"] == "COMPLETED"  # answers at once: no "has not ended yet"
        status = json.loads(gw.cli("status", str(job_id), "--json").stdout)
        assert status["attempt"] == 1
    assert sorted(runs.read_text().split()) == ["0", "1", "2", "3"], "a job ran twice or not at all"

    events = [json.loads(line) for line in gw.cli("events", "--json").stdout.splitlines()]
    for job_id in [*ids, dependent]:
        mine = [e for e in events if e["job_id"] == job_id]
        reports = [e for e in mine if e["kind"] == "job.report"]
        ends = [e for e in mine if e["kind"] == "job.state" and e["data"]["state"] in TERMINAL]
        assert len(reports) == 1, (job_id, point, reports)
        assert len(ends) == 1, (job_id, point, ends)
        assert ends[0]["seq"] < reports[0]["seq"]


def test_a_bad_fault_spec_stops_the_gateway_with_one_line(gateway_factory: Any) -> None:
    gw = gateway_factory(env={"FRONTDESK_FAULT": "after_state_stored:zero"}, start=False)
    with pytest.raises(RuntimeError, match="gateway did not start"):
        gw.start(timeout=60)  # it exits at once; the deadline only bounds a slow start on a loaded machine
    assert "FRONTDESK_FAULT: bad count" in gw.log()
