"""The dashboard's HTML (pure rendering) against reviewed golden files (FRONTDESK_REGEN_GOLDEN=1 rewrites)."""

from __future__ import annotations

import os
from pathlib import Path

from frontdesk.plugins import Panel
from frontdesk.telemetry.dashboard import JobRow, VerdictRow, render_main, render_page, render_report

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


def test_panels_golden_and_escaped() -> None:
    panels = [
        Panel("Sessions", ("session", "unread reports"), (("s-1", "2"), ("<i>s-2</i>", "0"))),
        Panel("Lessons", ("#", "kind"), (), note="none yet & nothing to show"),
    ]
    main = render_main("alice", False, JOBS, VERDICTS, panels)
    assert "<i>s-2</i>" not in main and "&lt;i&gt;s-2&lt;/i&gt;" in main
    _check("dashboard_panels.html", render_page("alice", False, JOBS, VERDICTS, panels))
