"""Issue 12, "Must show": a SIGKILL at every step of a job's end, of the gateway and of the shepherd. After a
restart every job has exactly one report, one terminal state event and one report event, and ran no more
times than its attempts say (exactly as many, where the kill came after the job's own first line).

Kill points come from frontdesk.faults (FRONTDESK_FAULT=<point>): the shepherd's in backends/shepherd.py, the
gateway's end path in the gateway (H7's lifecycle). A point not in the source yet is skipped, saying so.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from fault_helpers import until

pytestmark = pytest.mark.slow

SRC = Path(__file__).resolve().parents[2] / "src" / "frontdesk"
TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "DEPENDENCY_NEVER_SATISFIED"}

SHEPHERD_POINTS = ["shepherd_started", "shepherd_job_exited", "shepherd_result_written"]
SHEPHERD_END = {
    "shepherd_started": ("NODE_FAIL", 2),  # fenced, retried once, fenced again
    "shepherd_job_exited": ("NODE_FAIL", 2),  # the exit status died with the shepherd: lost, fenced, retried
    "shepherd_result_written": ("COMPLETED", 1),  # only the push was lost: the tick finds the result
}
GATEWAY_POINTS = ["after_state_stored", "after_report_built", "after_report_stored"]
JOBS = 4


def _in_source(point: str) -> bool:
    pattern = re.compile(rf"faults\.point\(\s*[\"']{point}[\"']")
    return any(pattern.search(p.read_text()) for p in SRC.rglob("*.py"))


def _submit_jobs(gw: Any, runs: Path) -> list[int]:
    cmd = f"echo $FRONTDESK_JOB_ID >> '{runs}'; sleep 0.3"
    spec = {"command": ["/bin/sh", "-c", cmd], "retry": {"count": 1, "on": ["NODE_FAIL"]}}
    return [gw.client.submit(spec=spec)["id"] for _ in range(JOBS)]


def _check_every_job_once(gw: Any, ids: list[int], runs: Path, exact_runs: bool) -> None:
    res = gw.client.wait(ids, "all", 120)
    assert res["done"], res["pending"]
    ran = Counter(int(x) for x in runs.read_text().split()) if runs.exists() else Counter()
    events = list(gw.client.events(since=0))
    for job_id in ids:
        report = gw.client.report(job_id)
        mine = [e for e in events if e["job_id"] == job_id]
        terminal = [e for e in mine if e["kind"] == "job.state" and e["data"].get("state") in TERMINAL]
        reports = [e for e in mine if e["kind"] == "job.report"]
        assert len(terminal) == 1, (job_id, [e["data"] for e in terminal])
        assert len(reports) == 1, (job_id, len(reports))
        assert reports[0]["data"]["report"]["state"] == report["state"] == terminal[0]["data"]["state"]
        assert ran[job_id] <= report["attempts"], (job_id, ran[job_id], report["attempts"])
        if exact_runs:
            assert ran[job_id] == report["attempts"], (job_id, ran[job_id], report["attempts"])


@pytest.mark.parametrize("point", SHEPHERD_POINTS)
def test_shepherd_killed_at_each_step_of_a_job_end(gateway_factory: Any, tmp_path: Path, point: str) -> None:
    if not _in_source(point):
        pytest.skip(f"kill point {point} is not in the source yet")
    gw = gateway_factory(env={"FRONTDESK_PLUGINS": "none", "FRONTDESK_FAULT": point})
    runs = tmp_path / "runs"
    ids = _submit_jobs(gw, runs)
    _check_every_job_once(gw, ids, runs, exact_runs=point != "shepherd_started")
    ends = {(gw.client.report(i)["state"], gw.client.report(i)["attempts"]) for i in ids}
    assert ends == {SHEPHERD_END[point]}, "the kill point was not reached"
    gw.env.pop("FRONTDESK_FAULT")
    gw.kill9()
    gw.start()  # a restart re-reads every attempt's files: still exactly once
    _check_every_job_once(gw, ids, runs, exact_runs=point != "shepherd_started")


@pytest.mark.parametrize("point", GATEWAY_POINTS)
def test_gateway_killed_at_each_step_of_a_job_end(gateway_factory: Any, tmp_path: Path, point: str) -> None:
    if not _in_source(point):
        pytest.skip(f"kill point {point} is not in the gateway yet (H7's lifecycle)")
    gw = gateway_factory(env={"FRONTDESK_PLUGINS": "none", "FRONTDESK_FAULT": point})
    runs = tmp_path / "runs"
    ids = _submit_jobs(gw, runs)
    until(lambda: gw.proc.poll() is not None, timeout=60, what=f"the gateway to die at {point}")
    assert gw.proc.returncode == -9
    gw.env.pop("FRONTDESK_FAULT")
    gw.start()
    _check_every_job_once(gw, ids, runs, exact_runs=True)
