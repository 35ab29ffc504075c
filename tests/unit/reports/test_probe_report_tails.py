"""A job's output reaches the report an agent reads (and a person's terminal): escape sequences it printed
(`ESC]0;title BEL`, colours, cursor moves), NUL, DEL, C1 controls and bidi overrides went into the tails raw.
Now sequences are dropped and other control characters shown as `\\xNN`; the text around them is kept."""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[2]))

from frontdesk.jobs.state import JobState  # noqa: E402
from frontdesk.reports.build import build_report  # noqa: E402
from frontdesk.reports.render import render_text  # noqa: E402
from report_helpers import job_record  # noqa: E402

HOSTILE = (
    "ok\ufffd\x00\x1b[31mred\x1b[0m\x1b]0;pwned title\x07 tab\there\n"
    "\x1b[2K\x1b[1A\x1b]52;c;ZWNobyBoaQ==\x1b\\clip\x9b\u202eevil\x7f\n"
)


def test_control_characters_never_reach_the_report_raw() -> None:
    rec = job_record(state=JobState.FAILED, exit_code=1, started_at=1001.0, ended_at=1002.0)
    rep = build_report(rec, stdout_text=HOSTILE, stderr_text=HOSTILE, redact=lambda s: s)
    text = render_text(rep)
    for shown in (text, *rep.stdout_tail, *rep.stderr_tail):
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]", shown), repr(shown)
    assert rep.stdout_tail == ("ok\ufffd\\x00red tab\there", "clip\\x9b\\u202eevil\\x7f")
    assert "pwned" not in text and "ZWNobyBoaQ" not in text
