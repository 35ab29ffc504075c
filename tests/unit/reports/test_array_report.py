"""The array report (reports/arrays.py): golden text, the 2 KB bound at any size, metrics, failure groups."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frontdesk.jobs.record import JobRecord
from frontdesk.reports.arrays import (
    TaskSummary,
    build_array_report,
    index_ranges,
    last_metric_line,
    metrics_of,
)
from frontdesk.reports.model import ArrayReport
from report_helpers import job_record

GOLDEN = Path(__file__).parents[2] / "golden" / "reports"


def _parent(size: int, state: str = "FAILED") -> JobRecord:
    return job_record(id=40, name="sweep-lr", state=state, session="s1", backend="local", array_size=size)


def _task(i: int, state: str = "COMPLETED", **kw: Any) -> TaskSummary:
    base: dict[str, Any] = {"run_s": 10.0 + i, "peak_rss_bytes": (100 + i) * 1024**2}
    if state == "COMPLETED":
        base["metric"] = f"epoch=3 loss={0.5 - i / 100:.3f} val_loss={0.6 - (i % 7) / 50:.3f}"
        base["kind"] = "ok"
    base.update(kw)
    return TaskSummary(index=i, job_id=41 + i, state=state, **base)


def _small() -> dict[str, Any]:
    tasks = [_task(i) for i in range(8)]
    tasks[3] = _task(3, "FAILED", kind="exit_error", exit_code=1, summary="exit code 1: ValueError: lr too big")
    tasks[6] = _task(6, "OUT_OF_MEMORY", kind="oom", summary="out of memory: peak 2G against a limit of 2G")
    tasks[7] = _task(7, "FAILED", kind="exit_error", exit_code=1, summary="exit code 1: ValueError: lr too big")
    return build_array_report(_parent(8), tasks).wire()


def _large() -> dict[str, Any]:
    tasks = [_task(i) for i in range(1000)]
    for i in (17, 400, 401, 402, 999):
        tasks[i] = _task(i, "FAILED", kind="exit_error", exit_code=2, summary="exit code 2: cannot open data")
    tasks[500] = _task(500, "TIMEOUT", kind="timeout", summary="walltime ran out after 1h0m (limit 1h0m)")
    return build_array_report(_parent(1000), tasks).wire()


@pytest.mark.parametrize(("name", "make"), [("array_small", _small), ("array_1000", _large)])
def test_array_report_golden(name: str, make: Any) -> None:
    rep = make()
    text_path, json_path = GOLDEN / f"{name}.txt", GOLDEN / f"{name}.json"
    if os.environ.get("FRONTDESK_REGEN_GOLDEN"):
        text_path.write_text(rep["text"] + "\n")
        json_path.write_text(json.dumps({k: v for k, v in rep.items() if k != "text"}, indent=1, sort_keys=True) + "\n")
    assert rep["text"] + "\n" == text_path.read_text()
    assert json.loads(json_path.read_text()) == json.loads(json.dumps({k: v for k, v in rep.items() if k != "text"}))


def test_the_small_array_lists_every_task_and_groups_failures() -> None:
    rep = _small()
    text = rep["text"]
    assert all(f"\n{i:>5} " in text for i in range(8))
    groups = {f["kind"]: f for f in rep["array"]["failures"]}
    assert groups["exit_error"]["count"] == 2 and groups["exit_error"]["tasks"] == "3,7"
    assert groups["oom"]["tasks"] == "6"
    assert rep["array"]["metric"] == {"name": "val_loss", "better": "lower"}
    assert rep["array"]["counts"] == {"COMPLETED": 5, "FAILED": 2, "OUT_OF_MEMORY": 1}


def test_a_thousand_tasks_summarise_within_the_budget_and_keep_every_failure() -> None:
    rep = _large()
    assert len(rep["text"].encode()) <= 2048
    for i in (17, 400, 401, 402, 500, 999):
        assert f"\n{i:>5} " in rep["text"]  # every failed task has its row
    assert "more tasks not shown" in rep["text"]
    assert len(rep["array"]["tasks"]) == 200 and rep["array"]["tasks_omitted"] == 800
    assert len(json.dumps(rep)) < 64 * 1024


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["COMPLETED", "FAILED", "TIMEOUT", "CANCELLED", "RUNNING"]),
            st.text(max_size=300),
            st.none() | st.floats(0, 1e6, allow_nan=False),
        ),
        min_size=1,
        max_size=300,
    ),
    st.integers(600, 4096),
)
def test_any_array_fits_its_budget(rows: list[tuple[str, str, float | None]], budget: int) -> None:
    tasks = [
        TaskSummary(index=i, job_id=i + 1, state=s, metric=m or None, run_s=r, summary=m or None, kind="k")
        for i, (s, m, r) in enumerate(rows)
    ]
    rep = build_array_report(_parent(len(tasks)), tasks, max_bytes=budget).wire()
    assert len(rep["text"].encode()) <= budget
    assert sum(rep["array"]["counts"].values()) == len(tasks)


def test_metric_lines_and_index_ranges() -> None:
    assert last_metric_line(["epoch 1 loss=0.5", "saving", "Error: disk"]) == "epoch 1 loss=0.5"
    assert last_metric_line(["nothing here", "error: 5 files"]) is None
    assert metrics_of("step 10 loss=0.25 val_acc: 0.91 acc=9e-1") == {"loss": 0.25, "val_acc": 0.91, "acc": 0.9}
    assert index_ranges([9, 1, 3, 5, 6, 7, 8]) == "1,3,5-9"
    assert index_ranges([]) == ""


def test_an_early_report_says_others_still_run() -> None:
    tasks = [_task(0), _task(1, "FAILED", kind="exit_error", summary="exit code 1"), _task(2, "RUNNING")]
    rep = build_array_report(_parent(3, "RUNNING"), tasks, early=True).wire()
    assert "first failure, others still running" in rep["text"].splitlines()[0]
    assert rep["array"]["early"] is True


@pytest.mark.parametrize("name", ["array_small", "array_1000"])
def test_the_typed_array_report_reads_its_json_back(name: str) -> None:
    data = json.loads((GOLDEN / f"{name}.json").read_text())  # the golden JSON holds all but the text
    text = (GOLDEN / f"{name}.txt").read_text().removesuffix("\n")
    again = ArrayReport.model_validate({**data, "text": text}).wire()
    assert json.dumps(again, sort_keys=True) == json.dumps({**data, "text": text}, sort_keys=True)
    assert (
        list(again)
        == list(_small())
        == [
            *("job_id", "name", "state", "exit_code", "signal", "session", "backend"),
            *("array", "classification", "extra", "text"),
        ]
    )  # the stored key order, as before the typed report
