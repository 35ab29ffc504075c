"""The dashboard's HTML (pure rendering) against reviewed golden files (FRONTDESK_REGEN_GOLDEN=1 rewrites)."""

from __future__ import annotations

import os
from pathlib import Path

from frontdesk.telemetry.dashboard import JobRow, VerdictRow, render_page, render_report

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "insight"
JOBS = [
    JobRow(3, "train", "alice", "FAILED", "training", "missing_import"),
    JobRow(2, "eval", "alice", "RUNNING", "hpc", ""),
    JobRow(1, "prep", "alice", "COMPLETED", "", "ok"),
]
VERDICTS = [VerdictRow(7, "alice", "deny", "fs.rm-root", "rm -rf / '<b>x</b>'")]


def _check(name: str, rendered: str) -> None:
    path = GOLDEN / name
    if os.environ.get("FRONTDESK_REGEN_GOLDEN"):
        path.write_text(rendered)
    assert rendered == path.read_text(), f"{name} changed; regenerate on purpose and review"


def test_page_golden() -> None:
    _check("dashboard.html", render_page("alice", False, JOBS, VERDICTS))


def test_report_golden() -> None:
    _check("report.html", render_report(3, "frontdesk job 3: FAILED <missing_import>\n"))
