"""Job arrays in the gateway: accepting one (`arrayaccept.py`: the parent and its tasks, one transaction), the `%N`
limit, handing tasks over (in one call where the backend `SubmitsArrays`), the parent's state, cancel, and its report.

The parent row is never handed to a backend: its state follows its tasks (RUNNING once one runs, ended once
all ended: COMPLETED when every task completed) and it carries the session, so its one report is the one wake.
Each task is a job row of its own (its own attempts, retries, logs and report), linked by `array_id`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from frontdesk import faults
from frontdesk.backends.base import SubmitsArrays
from frontdesk.core.arrayaccept import accept_array
from frontdesk.events.models import Event, EventKind
from frontdesk.jobs.lifecycle import (
    Action,
    CancelAsked,
    DepsSeen,
    Launched,
    LaunchFailed,
    Launching,
    PrepareFailed,
    step,
)
from frontdesk.jobs.record import EndStage, JobRecord, Scalar
from frontdesk.jobs.state import JobState
from frontdesk.reports.arrays import TaskSummary, build_array_report, last_metric_line
from frontdesk.reports.model import Report
from frontdesk.spec.arrays import parse_array
from frontdesk.store import arrays as q
from frontdesk.store.jobs import job_record

if TYPE_CHECKING:
    from frontdesk.gateway import Gateway

log = logging.getLogger("frontdesk.gateway")

__all__ = [
    "accept_array",
    "array_report",
    "cancel",
    "cancel_array",
    "dispatch_ready",
    "public",
    "reconcile",
    "report_of",
    "task_changed",
    "task_ended",
]


def public(gw: Gateway, rec: JobRecord) -> dict[str, Any]:
    """The public JSON form of a job; an array's parent adds `array`: size, %N limit, tasks by state."""
    out = job_record(rec)
    if rec.array_size is not None:
        limit = parse_array(rec.spec_data()["array"]).max_running if rec.spec_data().get("array") else None
        counts = q.counts(gw.store, [rec.id])[rec.id]
        out["array"] = {"size": rec.array_size, "max_running": limit, "counts": counts}
    return out


def _limits(gw: Gateway, array_ids: Sequence[int]) -> dict[int, int | None]:
    out: dict[int, int | None] = {}
    for array_id in array_ids:
        parent = gw.store.get(array_id)
        text = parent.spec_data().get("array") if parent else None
        out[array_id] = parse_array(text).max_running if text else None
    return out


def within_limits(gw: Gateway, rows: Sequence[JobRecord]) -> list[JobRecord]:
    """The waiting rows that may go now: every plain job, array tasks only within their array's `%N`."""
    arrays = sorted({r.array_id for r in rows if r.array_id is not None})
    if not arrays or isinstance(gw.backend, SubmitsArrays):
        return list(rows)  # a backend that queues arrays itself applies %N itself (Slurm's ArrayTaskThrottle)
    limits = _limits(gw, arrays)
    room: dict[int, int | None] = {}
    for array_id, busy in q.in_flight(gw.store, arrays).items():
        limit = limits[array_id]
        room[array_id] = None if limit is None else max(0, limit - busy)
    out = []
    for row in sorted(rows, key=lambda r: (r.array_id or 0, r.array_index or 0)):
        if row.array_id is None:
            out.append(row)
            continue
        left = room[row.array_id]
        if left is None or left > 0:
            out.append(row)
            if left is not None:
                room[row.array_id] = left - 1
    return sorted(out, key=lambda r: r.id)


async def dispatch_ready(gw: Gateway, rows: Sequence[JobRecord], now: float) -> list[JobRecord]:
    """Array tasks whose dependencies are met go to the backend together; the other rows are returned."""
    if all(r.array_id is None for r in rows) or not isinstance(gw.backend, SubmitsArrays):
        return list(rows)  # no task among them: the runtime Protocol check (about 20 µs) is not needed
    plain = [r for r in rows if r.array_id is None]
    groups: dict[int, list[JobRecord]] = {}
    for row in rows:
        if row.array_id is None:
            continue
        ids = tuple(int(d) for d in row.spec_data().get("depends_on", []))
        states = tuple(d.state if d else None for d in (gw.store.get(i) for i in ids))
        if step(row, DepsSeen(states, ids), now).action is Action.DISPATCH:
            if row.eligible_at is None:
                gw.store.update_job(row.id, eligible_at=now)
            groups.setdefault(row.array_id, []).append(row)
        else:
            plain.append(row)  # waits, or ends: the ordinary path
    for array_id, tasks in groups.items():
        await _hand_over(gw, array_id, tasks)
    return plain


async def _hand_over(gw: Gateway, array_id: int, tasks: Sequence[JobRecord]) -> None:
    backend = gw.backend
    assert isinstance(backend, SubmitsArrays)
    ready, jobs = [], []
    for row in tasks:
        try:
            jobs.append(gw._backend_job(row))
            ready.append(row)
        except (OSError, ValueError) as exc:
            await gw._step(row, PrepareFailed(str(exc)))
    if not ready:
        return
    for row in ready:
        await gw._step(gw._fresh(row.id), Launching())
    try:
        bids = await backend.submit_array(jobs, _limits(gw, [array_id])[array_id])
        if len(bids) != len(ready):
            raise RuntimeError(f"the backend answered {len(bids)} ids for {len(ready)} tasks")
    except Exception as exc:
        for row in ready:
            await gw._step(gw._fresh(row.id), LaunchFailed(str(exc)))
        return
    for row, bid in zip(ready, bids, strict=True):
        await gw._step(gw._fresh(row.id), Launched(bid))
        faults.point("array_task_launched")  # handed over, later tasks' ids not stored yet (tests/faults)


def task_changed(gw: Gateway, rec: JobRecord, new_state: Scalar) -> None:
    """A task started: its array, still PENDING, is RUNNING from now (one job.state event). Others: nothing.
    A task first seen SUSPENDED (frozen for a trial before a query saw it run) has started too."""
    if rec.array_id is None or new_state not in (JobState.RUNNING.value, JobState.SUSPENDED.value):
        return
    parent = gw.store.get(rec.array_id)
    if parent is None or parent.state is not JobState.PENDING:
        return
    now = time.time()
    data = {
        "state": JobState.RUNNING.value,
        "previous": JobState.PENDING.value,
        "reason": None,
        "attempt": 1,
        "backend_id": None,
    }
    event = Event(EventKind.JOB_STATE, data=data, job_id=parent.id, session=parent.session, principal=parent.principal)
    with gw.store.transaction():
        gw.store.update_job(parent.id, state=JobState.RUNNING.value, started_at=now, reason=None)
        stored = gw.store.append_event(event)
    gw.bus.fanout(stored)


def _end_state(parent: JobRecord, tasks: Sequence[JobRecord]) -> tuple[JobState, str]:
    states = [t.state for t in tasks]
    bad = [s for s in states if s is not JobState.COMPLETED]
    if not bad:
        return JobState.COMPLETED, f"all {len(states)} tasks completed"
    by_state: dict[str, int] = {}
    for s in bad:
        by_state[s.value] = by_state.get(s.value, 0) + 1
    said = ", ".join(f"{n} {s}" for s, n in sorted(by_state.items()))
    reason = f"{len(bad)} of {len(states)} tasks did not complete ({said})"
    if parent.cancel_requested or all(s is JobState.CANCELLED for s in bad):
        return JobState.CANCELLED, reason
    if len(bad) == len(states) and all(s is JobState.DEPENDENCY_NEVER_SATISFIED for s in bad):
        return JobState.DEPENDENCY_NEVER_SATISFIED, reason
    return JobState.FAILED, reason


async def task_ended(gw: Gateway, rec: JobRecord) -> None:
    """A task's end is stored and told: tell the array's first failure (if asked), end the array after its last."""
    if rec.array_id is None:
        return
    parent = gw.store.get(rec.array_id)
    if parent is None or parent.terminal:
        return
    if q.unfinished(gw.store, parent.id):
        if rec.state is not JobState.COMPLETED and parent.spec_data().get("array_report") == "first_failure":
            _first_failure(gw, parent)
        return
    await _end_array(gw, parent)


async def _end_array(gw: Gateway, parent: JobRecord) -> None:
    tasks = q.tasks(gw.store, parent.id)
    state, reason = _end_state(parent, tasks)
    starts = [t.started_at for t in tasks if t.started_at]
    changes: dict[str, Scalar] = {
        "state": state.value,
        "reason": reason,
        "ended_at": max((t.ended_at or 0.0) for t in tasks) or time.time(),
        "started_at": parent.started_at or (min(starts) if starts else None),
        "exit_code": 0 if state is JobState.COMPLETED else None,
        "report_pending": int(EndStage.STATE_STORED),
    }
    gw.store.update_job(parent.id, **changes)
    await gw._finish(parent.id)


def _first_failure(gw: Gateway, parent: JobRecord) -> None:
    """The early report: told once, at the first task that did not complete (the agents store keeps one per job)."""
    told = gw.store.events_since(0, job_id=parent.id, kinds=[str(EventKind.JOB_REPORT)], limit=1)
    if told:
        return
    report = array_report(gw, parent, early=True)
    event = Event(
        EventKind.JOB_REPORT,
        data={"report": report},
        job_id=parent.id,
        session=parent.session,
        principal=parent.principal,
    )
    gw.publish(event)


def _task_report(task: JobRecord) -> Report | None:
    """The task's stored report, typed; None before it is built (or where what is stored is not a report)."""
    data = task.report_data()
    if data is None:
        return None
    try:
        return Report.from_wire(data)
    except ValidationError as exc:
        log.warning(
            "job %s: its stored report is not one (%s); the array report lists the task without it", task.id, exc
        )
        return None


def _summary(task: JobRecord) -> TaskSummary:
    rep = _task_report(task)
    out, err = (list(rep.stdout_tail), list(rep.stderr_tail)) if rep is not None else ([], [])
    run_s = rep.run_s if rep is not None else None
    if run_s is None and task.started_at and task.ended_at:
        run_s = round(task.ended_at - task.started_at, 3)
    peak = rep.used.peak_rss_bytes if rep is not None else None
    cls = rep.classification if rep is not None else None
    return TaskSummary(
        index=int(task.array_index or 0),
        job_id=task.id,
        state=task.state.value,
        run_s=run_s,
        peak_rss_bytes=round(peak) if isinstance(peak, float) else peak,  # a byte count is whole
        metric=last_metric_line(out) or last_metric_line([*out, *err]),
        kind=cls.kind if cls is not None else None,
        summary=cls.summary if cls is not None and task.state is not JobState.COMPLETED else None,
        exit_code=task.exit_code,
    )


def report_of(gw: Gateway, rec: JobRecord) -> dict[str, Any]:
    """An ended job's report: an array's from its tasks, any other job's from its record and logs (core/ending)."""
    if rec.is_array:
        return array_report(gw, rec)
    from frontdesk.core.ending import make_report

    return make_report(rec, gw.plugins, gw.redact, gw.settings.report_max_bytes).wire()


def array_report(gw: Gateway, parent: JobRecord, *, early: bool = False) -> dict[str, Any]:
    """The array's one report, from its tasks' own reports (redacted there), within the report budget."""
    summaries = [_summary(t) for t in q.tasks(gw.store, parent.id)]
    report = build_array_report(parent, summaries, early=early, max_bytes=gw.settings.report_max_bytes)
    return report.with_text(gw.redact(report.text)).wire()


async def cancel(gw: Gateway, row: JobRecord) -> dict[str, Any]:
    """Cancel a job that has not ended: one job (its lifecycle's CancelAsked), or every task of an array."""
    if row.is_array:
        return await cancel_array(gw, row)
    await gw._step(row, CancelAsked())
    return public(gw, gw._fresh(row.id))


async def cancel_array(gw: Gateway, parent: JobRecord) -> dict[str, Any]:
    """Cancel every task that has not ended; the array ends (CANCELLED) with its last task. Other callers are
    served between tasks (a 10,000-task array is 10,000 ends)."""
    gw.store.update_job(parent.id, cancel_requested=1, reason="cancel requested")
    for n, task in enumerate(q.unfinished_tasks(gw.store, parent.id)):
        fresh = gw._fresh(task.id)
        if not fresh.terminal:  # it may have ended while the loop served others
            await gw._step(fresh, CancelAsked())
        if n % 32 == 31:
            await asyncio.sleep(0)
    fresh = gw._fresh(parent.id)
    if not fresh.terminal and not q.unfinished(gw.store, parent.id):
        await _end_array(gw, fresh)
    return public(gw, gw._fresh(parent.id))


async def reconcile(gw: Gateway) -> None:
    """After a restart: an array whose tasks all ended while its own end was not stored ends now."""
    for parent in gw.store.select(active=True, top_level=True, limit=100000):
        if parent.array_size is not None and not q.unfinished(gw.store, parent.id):
            await _end_array(gw, parent)
