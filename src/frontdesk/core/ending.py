"""A job's end: its report (built once, enriched by plug-ins, redacted), its terminal events, and how the gateway
stores and tells them (`end`: one commit; `finish`: an end stored in stages, after a crash or an array's)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from pydantic import JsonValue

from frontdesk import faults
from frontdesk.core import arrays
from frontdesk.events.models import Event, EventKind
from frontdesk.jobs.record import EndStage, JobRecord, Scalar
from frontdesk.jobs.state import JobState
from frontdesk.plugins import Enriches, Plugin, Redactor
from frontdesk.reports.build import build_report
from frontdesk.reports.model import Report
from frontdesk.reports.render import render_text
from frontdesk.store.jobs import JobStore
from frontdesk.tails import read_tail

if TYPE_CHECKING:
    from frontdesk.gateway import Gateway
    from frontdesk.jobs.lifecycle import Transition

__all__ = ["end", "end_events", "ended_record", "finish", "make_report", "stored_end_events"]

log = logging.getLogger("frontdesk.gateway")

_REAL = ("submitted_at", "eligible_at", "started_at", "ended_at")
"""The jobs table's REAL columns: an int stored there reads back a float."""


_FIELDS = frozenset(f.name for f in dataclasses.fields(JobRecord)) - {"others", "idempotency_key"}
_AS_READ: dict[str, Callable[[Any], Any]] = {
    "state": JobState,
    "submitting": bool,
    "cancel_requested": bool,
    "report_pending": lambda v: EndStage(int(v or 0)),
    "priority": lambda v: int(v or 0),
}
"""What `JobRecord.from_row` makes of a stored column's value (the rest are read back as stored)."""


def ended_record(rec: JobRecord, changes: Mapping[str, Scalar]) -> JobRecord:
    """The record as it reads once `changes` are stored: the report is built from it before its one commit.

    Only the changed columns are converted as a read converts them (a third of the time of building the
    record again from every column, on every job's end); `tests/unit/core/test_ended_record.py` compares it
    with the row stored and read back."""
    if not changes.keys() <= _FIELDS:
        return _read_back(rec, changes)
    update: dict[str, Any] = {}
    for col, value in changes.items():
        if col in _REAL and isinstance(value, int):
            value = float(value)
        convert = _AS_READ.get(col)
        update[col] = value if convert is None else convert(value)
    for col in _REAL:  # a record from an INSERT's RETURNING holds an int where a read gives a float
        if col not in update and isinstance(value := getattr(rec, col), int):
            update[col] = float(value)
    return dataclasses.replace(rec, **update)


def _read_back(rec: JobRecord, changes: Mapping[str, Scalar]) -> JobRecord:
    """`ended_record` for any column (another component's, the idempotency key): the whole row built again."""
    row: dict[str, Scalar] = {k: rec[k] for k in rec.keys()}
    row.update(changes)
    for col in _REAL:
        if isinstance(value := row.get(col), int):
            row[col] = float(value)
    return JobRecord.from_row(_Row(row))  # type: ignore[arg-type]


class _Row:
    """What `JobRecord.from_row` reads of a `sqlite3.Row`: its column names, its values by position and by name."""

    def __init__(self, cols: dict[str, Scalar]) -> None:
        self._cols = cols

    def keys(self) -> list[str]:
        return list(self._cols)

    def __iter__(self) -> Iterator[Scalar]:
        return iter(self._cols.values())

    def __getitem__(self, key: str) -> Scalar:
        return self._cols[key]


def make_report(rec: JobRecord, plugins: Sequence[Plugin], redact: Redactor, max_bytes: int) -> Report:
    """The job's report: built from its record and log tails, then each plug-in's `enrich` (errors logged)."""
    uid = rec.runs_as()  # a root gateway reads only the job's user's files (its -o may name any path)
    out, err = read_tail(rec.stdout_path, owner=uid), read_tail(rec.stderr_path, owner=uid)
    report = build_report(rec, stdout_text=out, stderr_text=err, redact=redact)
    for plugin in plugins:
        report = _enriched(plugin, rec, report)
    report = report.with_text(redact(render_text(report, max_bytes)))
    if rec.array_id is not None:  # a task: told within its array's one report, never on its own
        report = report.as_task(rec.array_id, rec.array_index)
    return report


_ENRICHES: dict[type, bool] = {}
"""Whether a plug-in class enriches: a runtime Protocol check costs ~30 µs, once per plug-in on every end."""


def _enriches(plugin: Plugin) -> bool:
    known = _ENRICHES.get(type(plugin))
    if known is None:
        known = _ENRICHES[type(plugin)] = isinstance(plugin, Enriches)
    return known


def _enriched(plugin: Plugin, rec: JobRecord, report: Report) -> Report:
    """The report as `plugin` enriched it; unchanged when it does not enrich, fails or answers something else."""
    if not _enriches(plugin):
        return report
    try:
        out = cast(Enriches, plugin).enrich(rec, report)
    except Exception:
        log.exception("plug-in %s failed to enrich the report of job %s", plugin.name, rec.id)
        return report
    if not isinstance(out, Report):
        log.error("plug-in %s enriched the report of job %s with a %s", plugin.name, rec.id, type(out).__name__)
        return report
    try:
        _wire_changed(report, out)  # what is stored: a section that cannot be JSON is the plug-in's failure
    except Exception:
        log.exception("plug-in %s added a section to the report of job %s that is not JSON", plugin.name, rec.id)
        return report
    return out


def _wire_changed(before: Report, after: Report) -> None:
    """Raise as `after.wire()` would, dumping only what `after` does not share with `before` (the plug-in's
    section, a field it replaced): the whole report is dumped once, when it is stored."""
    for name, section in after.extra.items():
        if before.extra.get(name) is not section:
            section.wire()
    changed = {f for f in Report.model_fields if f != "extra" and getattr(after, f) is not getattr(before, f)}
    if changed:
        after.model_dump(mode="json", include=changed)


def end_events(rec: JobRecord, report: Mapping[str, JsonValue]) -> list[Event]:
    """The terminal job.state and the job.report events of an ended job."""
    data = {
        "state": rec.state.value,
        "previous": None,
        "reason": rec.reason,
        "exit_code": rec.exit_code,
        "attempt": rec.attempt,
        "backend_id": rec.backend_id,
    }
    return [
        Event(EventKind.JOB_STATE, data=data, job_id=rec.id, session=rec.session, principal=rec.principal),
        Event(
            EventKind.JOB_REPORT, data={"report": report}, job_id=rec.id, session=rec.session, principal=rec.principal
        ),
    ]


def stored_end_events(store: JobStore, job_id: int) -> list[Event]:
    """The terminal job.state and job.report events stored before a crash (to fan out again)."""
    kinds = (str(EventKind.JOB_STATE), str(EventKind.JOB_REPORT))
    found = store.events_since(0, job_id=job_id, kinds=kinds, limit=1_000_000)
    report = [e for e in found if e.kind is EventKind.JOB_REPORT][-1:]
    if not report:
        return []
    state = [e for e in found if e.kind is EventKind.JOB_STATE and e.seq < report[0].seq][-1:]
    return [*state, *report]


async def end(gw: Gateway, rec: JobRecord, done: Transition) -> None:
    """A job's end in one commit: the report is built from the record as it will read, then the terminal state,
    the report and the terminal events are stored together (EndStage.EVENTS_STORED), then told.

    What plug-ins write while they enrich the report (memory's runs and lessons, their `lesson.recorded`
    events) is in the same commit, and their events are fanned out with the end's (`Bus.holding`).
    A crash before the commit leaves the job as it was, with nothing learned from it: the backend still says
    it ended, and the end is derived (and learned from) again, once. After the commit, the next start's
    recovery fans the stored end events out. Never told twice."""
    ended = ended_record(rec, done.changes)
    attempt = None if done.attempt is None else (rec.attempt, dict(done.attempt))
    with gw.store.transaction(), gw.bus.holding() as learned:  # nothing awaited inside: one commit, no other task
        report = arrays.report_of(gw, ended)  # make_report, or an array's one report; plug-ins' writes join in
        _reopened(gw, ended.id)
        faults.point("after_report_built")
        events = [*done.events, *end_events(ended, report)]
        stored = gw.store.end_job(rec.id, dict(done.changes), attempt, json.dumps(report), events)
    faults.point("after_state_stored")  # the state, the report, the events and what plug-ins learned: one commit
    faults.point("after_report_stored")
    await _told(gw, ended, report, [*learned, *stored])


def _reopened(gw: Gateway, job_id: int) -> None:
    """A plug-in that committed inside `enrich` (`with conn:`) closed the end's transaction: what it wrote is
    stored on its own, as before the end became one commit; the end's own rows still commit together."""
    if not gw.store.conn.in_transaction:
        log.error("a plug-in committed inside the end of job %s: its writes are not in the end's commit", job_id)
        gw.store.conn.execute("BEGIN IMMEDIATE")


async def finish(gw: Gateway, job_id: int) -> None:
    """Finish an end stored in stages: an array's (its state first), or one a crash cut short (on the next start).

    Each stage is stored before the next begins (`EndStage` in `report_pending`), so a crash anywhere is
    finished on the next start: a job's end is never lost and never told twice with two reports."""
    rec = gw._fresh(job_id)
    report = None
    if rec.report_pending is EndStage.EVENTS_STORED:
        stored = stored_end_events(gw.store, job_id)
    else:
        report = arrays.report_of(gw, rec)
        faults.point("after_report_built")
        stored = gw.store.store_report(job_id, json.dumps(report), end_events(rec, report))
        faults.point("after_report_stored")
    await _told(gw, rec, report, stored)


async def _told(gw: Gateway, rec: JobRecord, report: dict[str, Any] | None, stored: Sequence[Event]) -> None:
    """A stored end told: its waiters first (with the stored report), the bus, then the end marked done."""
    if report is not None:
        gw.bus.waiters.ended(rec.id, report)  # stored: its waiters answer with it, not a read-back
        await asyncio.sleep(0)  # they answer first: the subscribers (a session's delivery: several writes) wait
    for event in stored:
        gw.bus.fanout(event)
    if report is None:
        await asyncio.sleep(0)  # the waiters the fan-out woke answer first: the rest of this end is nobody's wait
    gw.store.update_job(rec.id, report_pending=int(EndStage.DONE))
    gw.waiting.ended(rec)  # the tick examines its dependents only (job_deps), not every waiting job
    gw._wake.set()
    await arrays.task_ended(gw, rec)  # a task: its array ends with its last task
