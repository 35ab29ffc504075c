"""A report as a reader who may not read the job's logs gets it (a labmate under `labmates_read_jobs`). Pure.

The site lets labmates read each other's records and reports, never their logs (docs/facility.md). A stored
report carries log lines: the stdout/stderr tails, the failure's summary (`exit code 1: <the error line>`), its
detail and the next step made from it, memory's signature of that line and the lessons it made, a site plug-in's
section, and in an array's report each task's cause and metric line. This view keeps what the job did (state,
exit, timings, usage against the request, the failure's kind and its advice without the line, the policy's class
and pool, the array's counts and failure kinds) and drops every one of those; its `text` is rendered again from
what is kept. Owners and admins get the stored report whole.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from frontdesk.reports.build import summary_head
from frontdesk.reports.classify import load_catalog
from frontdesk.reports.model import ArrayReport, Report
from frontdesk.reports.render import render_text

__all__ = ["KEPT_SECTIONS", "without_logs"]

KEPT_SECTIONS = frozenset({"policy"})
"""Plug-in sections kept (the job's class, pool and trial standing); the others may quote the log."""


def without_logs(report: Mapping[str, Any], max_bytes: int, redact: Callable[[str], str]) -> dict[str, Any]:
    """The stored report (its JSON) without log lines, re-rendered and redacted."""
    if "array" in report:
        return _array(ArrayReport.model_validate({**report, "extra": {}}), report)
    rep = Report.from_wire(report)
    cls = rep.classification
    head = summary_head(cls.kind, rep.exit_code, rep.signal)
    summary = head if cls.summary.startswith(head + ":") else cls.summary
    fixed = {"summary": summary}
    if cls.detail:  # what the log line gave (a module, a path, the error itself): the advice without it
        info = load_catalog().kinds.get(cls.kind)
        fixed.update(detail="", next_step=info.advice("") if info else "")
    reduced = rep.model_copy(
        update={
            "stdout_tail": (),
            "stderr_tail": (),
            "classification": cls.model_copy(update=fixed),
            "extra": {k: v for k, v in rep.extra.items() if k in KEPT_SECTIONS},
        }
    )
    return reduced.with_text(redact(render_text(reduced, max_bytes))).wire()


def _array(rep: ArrayReport, stored: Mapping[str, Any]) -> dict[str, Any]:
    summary = rep.array
    failures = tuple(f.model_copy(update={"example": None}) for f in summary.failures)
    rows = tuple(t.model_copy(update={"metric": None, "summary": None}) for t in summary.tasks)
    kept = summary.model_copy(update={"failures": failures, "tasks": rows})
    lines = [rep.text.splitlines()[0] if rep.text else f"frontdesk array {rep.job_id}: {rep.state}"]
    lines += [f"failed: {f.kind} x{f.count} (tasks {f.tasks[:60]})" for f in failures[:4]]
    out = rep.model_copy(update={"array": kept, "text": "\n".join(lines)}).wire()
    raw = stored.get("extra")
    out["extra"] = {k: v for k, v in (raw.items() if isinstance(raw, dict) else ()) if k in KEPT_SECTIONS}
    return out
