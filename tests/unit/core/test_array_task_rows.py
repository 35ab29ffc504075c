"""The array report's task rows (core/arrays._summary) read each task's stored report as the typed `Report`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from frontdesk.core.arrays import _summary
from frontdesk.jobs.state import JobState
from frontdesk.reports.model import Report
from report_helpers import job_record

GOLDEN = Path(__file__).parents[2] / "golden" / "reports"


def _wire(**changes: Any) -> str:
    data = json.loads((GOLDEN / "failed.json").read_text())
    data.update(changes)
    Report.from_wire(data)  # the test's input is a report
    return json.dumps(data)


def test_a_task_row_from_its_stored_report() -> None:
    used = {"cpu_seconds": 0.4, "gpu_mem_peak_bytes": None, "gpu_util_percent": None, "peak_rss_bytes": 3 * 1024**2}
    report = _wire(used=used, stdout_tail=["epoch=1 loss=0.9", "epoch=2 loss=0.4", "done"], stderr_tail=["warn"])
    task = job_record(id=12, state=JobState.FAILED, array_id=10, array_index=2, exit_code=1, report=report)
    row = _summary(task)
    assert (row.index, row.job_id, row.state, row.exit_code) == (2, 12, "FAILED", 1)
    assert row.run_s == 387.5 and row.peak_rss_bytes == 3 * 1024**2
    assert row.metric == "epoch=2 loss=0.4"
    assert row.kind == "missing_import" and row.summary is not None and "flash_attn" in row.summary


def test_a_completed_task_has_no_cause_and_an_int_figure_stays_an_int() -> None:
    task = job_record(id=13, state=JobState.COMPLETED, array_id=10, array_index=3, report=_wire(run_s=12))
    row = _summary(task)
    assert row.summary is None and row.kind == "missing_import"
    assert row.run_s == 12 and isinstance(row.run_s, int)


def test_a_task_without_a_readable_report_is_listed_from_its_record() -> None:
    for stored in (None, json.dumps({"job_id": 14, "state": "NOT_A_STATE"})):
        task = job_record(
            id=14, state=JobState.FAILED, array_index=4, started_at=1000.0, ended_at=1002.5, report=stored
        )
        row = _summary(task)
        assert (row.index, row.state, row.run_s) == (4, "FAILED", 2.5)
        assert row.kind is None and row.summary is None and row.metric is None and row.peak_rss_bytes is None
