"""The report a caller gets: whole for its owner and the admins, without log lines for the others who may read it
(labmates under `[access] labmates_read_jobs`: records and reports, never logs; reports/without_logs.py)."""

from __future__ import annotations

from typing import Any

from frontdesk.gateway import Gateway
from frontdesk.identity import Caller
from frontdesk.reports.without_logs import without_logs

__all__ = ["report_for", "reports_for"]


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
