"""The report a caller gets: whole for its owner and the admins, without log lines for the others who may read it
(labmates under `[access] labmates_read_jobs`: records and reports, never logs; reports/without_logs.py)."""

from __future__ import annotations

from typing import Any

from frontdesk.events.models import Event, EventKind
from frontdesk.gateway import Gateway
from frontdesk.identity import Caller
from frontdesk.reports.without_logs import without_logs

__all__ = ["event_for", "report_for", "reports_for"]

_OWNERS_ONLY = frozenset(
    {EventKind.SESSION_WAKE, EventKind.SESSION_REGISTERED, EventKind.LESSON_RECORDED, EventKind.JOB_WARNING}
)
"""Events about another's job that a reader of it still never gets: a wake-up's text ends with the report's log
tails, a session is its owner's (404 to others), a lesson quotes the failing log line, and so does a notice told
at submission (memory's quotes the submitter's own lesson: her earlier run's error line)."""


def report_for(gw: Gateway, caller: Caller, owner: str | None, report: dict[str, Any] | None) -> dict[str, Any] | None:
    """`report` (a stored report's JSON) as `caller` may read it."""
    if report is None or caller.admin or caller.owns(owner):
        return report
    return without_logs(report, gw.settings.report_max_bytes, gw.redact)


def reports_for(gw: Gateway, caller: Caller, owners: dict[int, str | None], result: dict[str, Any]) -> None:
    """A wait's answer (`reports`, a list) made fit for `caller`, in place; nothing to do for one's own jobs."""
    if caller.admin or all(caller.owns(o) for o in owners.values()):
        return
    result["reports"] = [report_for(gw, caller, owners.get(r.get("job_id", -1)), r) for r in result["reports"]]


def event_for(gw: Gateway, caller: Caller, event: Event) -> dict[str, Any] | None:
    """The JSON of a journal event the caller may see (Access.sees_event) as it may read it: another user's
    `job.report` without log lines, None for the kinds only the owner reads."""
    out = event.to_dict()
    if caller.admin or caller.owns(event.principal) or event.job_id is None:
        return out
    if event.kind in _OWNERS_ONLY:
        return None
    if event.kind is EventKind.JOB_SUBMITTED and "warnings" in event.data:  # the notices' texts (see _OWNERS_ONLY)
        out["data"] = {k: v for k, v in event.data.items() if k != "warnings"}
    report = event.data.get("report")
    if event.kind is EventKind.JOB_REPORT and isinstance(report, dict):
        out["data"] = {**event.data, "report": report_for(gw, caller, event.principal, report)}
    return out
