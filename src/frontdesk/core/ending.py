"""A job's end: its report (built once, enriched by plug-ins, redacted) and its terminal events."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from pydantic import JsonValue

from frontdesk.events.models import Event, EventKind
from frontdesk.jobs.record import JobRecord
from frontdesk.plugins import Enriches, Plugin, Redactor
from frontdesk.reports.build import build_report
from frontdesk.reports.model import Report
from frontdesk.reports.render import render_text
from frontdesk.store.jobs import JobStore
from frontdesk.tails import read_tail

__all__ = ["end_events", "make_report", "stored_end_events"]

log = logging.getLogger("frontdesk.gateway")


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


def _enriched(plugin: Plugin, rec: JobRecord, report: Report) -> Report:
    """The report as `plugin` enriched it; unchanged when it does not enrich, fails or answers something else."""
    if not isinstance(plugin, Enriches):
        return report
    try:
        out = plugin.enrich(rec, report)
    except Exception:
        log.exception("plug-in %s failed to enrich the report of job %s", plugin.name, rec.id)
        return report
    if not isinstance(out, Report):
        log.error("plug-in %s enriched the report of job %s with a %s", plugin.name, rec.id, type(out).__name__)
        return report
    try:
        out.wire()  # what is stored: a section that cannot be JSON is the plug-in's failure, not the job's
    except Exception:
        log.exception("plug-in %s added a section to the report of job %s that is not JSON", plugin.name, rec.id)
        return report
    return out


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
