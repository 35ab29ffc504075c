"""The enrich seam (core/ending.make_report): plug-ins take the typed Report and return it with their section.

The plug-ins here are real implementations of `plugins.Enriches` (a site plug-in adding a section, one that
amends the next step, one that fails, one written against the old dict seam), run over real log files.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from frontdesk.core.ending import end_events, make_report
from frontdesk.events.models import EventKind
from frontdesk.jobs.record import JobRecord
from frontdesk.jobs.state import JobState
from frontdesk.plugins import Enriches, Plugin
from frontdesk.reports.model import Report, ReportSection
from report_helpers import job_record

G = 1024**3


def _record(tmp_path: Path, **kw: object) -> JobRecord:
    out, err = tmp_path / "stdout.log", tmp_path / "stderr.log"
    out.write_text("epoch 1 loss 0.52\n")
    err.write_text("Traceback (most recent call last):\nModuleNotFoundError: No module named 'flash_attn'\n")
    fields: dict[str, object] = dict(
        id=42,
        name="train",
        spec={"command": ["python", "train.py"], "resources": {"cpus": 2, "memory": G}},
        state=JobState.FAILED,
        backend_id="42.1",
        session="s-1",
        job_class="agent",
        exit_code=1,
        started_at=1001.0,
        ended_at=1011.5,
        usage={"cpu_seconds": 3.5, "peak_rss_bytes": 200 * 1024**2},
        stdout_path=str(out),
        stderr_path=str(err),
    )
    fields.update(kw)
    return job_record(**fields)


class SitePlugin:
    """A site package's plug-in: one section of its own, read back from the job it was handed."""

    name = "site"

    def enrich(self, job: JobRecord, report: Report) -> Report:
        return report.with_section(self.name, ReportSection(lines=[f"billed to {job.principal}"], cost=1.5))


class AdvisingPlugin:
    """Knows a better next step."""

    name = "advice"

    def enrich(self, job: JobRecord, report: Report) -> Report:
        return report.with_next_step(report.classification.next_step + "; or use the site image")


class FailingPlugin:
    name = "broken"

    def enrich(self, job: JobRecord, report: Report) -> Report:
        raise RuntimeError("the site database is down")


class OldSeamPlugin:
    """Written against the old seam (a dict back): ignored, logged, the report unchanged."""

    name = "old"

    def enrich(self, job: object, report: object) -> dict[str, object]:
        return {"lines": ["never shown"]}


class NotJsonPlugin:
    """Adds a section holding something JSON cannot say: dropped, so the report is still stored."""

    name = "notjson"

    def enrich(self, job: JobRecord, report: Report) -> Report:
        return report.with_section(self.name, ReportSection(handle=object()))


class NotJsonFieldPlugin:
    """Replaces a field of the report itself with something JSON cannot say: dropped like a bad section."""

    name = "notjsonfield"

    def enrich(self, job: JobRecord, report: Report) -> Report:
        return report.model_copy(update={"run_s": object()})


def _plugins() -> list[Plugin]:
    return [FailingPlugin(), SitePlugin(), OldSeamPlugin(), NotJsonPlugin(), NotJsonFieldPlugin(), AdvisingPlugin()]


def test_plugins_enrich_the_typed_report(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    rec = _record(tmp_path)
    assert all(isinstance(p, Enriches) for p in _plugins())
    with caplog.at_level(logging.ERROR, logger="frontdesk.gateway"):
        rep = make_report(rec, _plugins(), lambda s: s.replace("alice", "«user»"), 2048)
    assert set(rep.extra) == {"site"}
    assert rep.extra["site"].wire() == {"lines": ["billed to alice"], "cost": 1.5}
    assert rep.classification.kind == "missing_import"
    assert rep.classification.next_step.endswith("; or use the site image")
    assert rep.text is not None and "site: billed to «user»" in rep.text  # rendered after enrich, then redacted
    assert "never shown" not in rep.text
    assert "the site database is down" in caplog.text and "enriched the report of job 42 with a dict" in caplog.text
    assert "plug-in notjson added a section to the report of job 42 that is not JSON" in caplog.text
    assert "plug-in notjsonfield added a section to the report of job 42 that is not JSON" in caplog.text
    assert isinstance(rep.run_s, (int, float)) and json.dumps(rep.wire())  # the field as built, still JSON
    assert rep.array_id is None and "array_id" not in rep.wire()


def test_the_stored_form_is_the_wire_form(tmp_path: Path) -> None:
    rep = make_report(_record(tmp_path, array_id=40, array_index=2), [SitePlugin()], lambda s: s, 2048)
    wire = rep.wire()
    assert list(wire)[-4:] == ["extra", "text", "array_id", "array_index"]
    assert (wire["array_id"], wire["array_index"]) == (40, 2)
    events = end_events(_record(tmp_path), wire)
    assert [e.kind for e in events] == [EventKind.JOB_STATE, EventKind.JOB_REPORT]
    assert events[1].data["report"] == wire
    assert Report.from_wire(json.loads(json.dumps(wire))) == rep
