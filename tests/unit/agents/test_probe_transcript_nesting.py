"""The live inbox's idle check parses the tail of a transcript the session writes: a line nested 60,000 deep
raised RecursionError (not a ValueError) out of the check into the gateway; it is a line like any torn one."""

from __future__ import annotations

import os
import time
from pathlib import Path

from frontdesk.agents.channels.inbox import transcript_idle


def test_a_deeply_nested_line_is_skipped(tmp_path: Path) -> None:
    t = tmp_path / "t.jsonl"
    t.write_text('{"type": "system", "subtype": "turn_duration"}\n' + "[" * 60000 + "\n")
    assert transcript_idle(str(t), time.time() + 60) is True


def test_a_transcript_not_of_the_sessions_user_tells_nothing(tmp_path: Path) -> None:
    """A session names its transcript path; a root gateway reads only a file of the session's own uid (alice naming
    bob's transcript learned whether his turn had ended)."""
    t = tmp_path / "t.jsonl"
    t.write_text('{"type": "system", "subtype": "turn_duration"}\n')
    mine = os.stat(t).st_uid
    assert transcript_idle(str(t), time.time() + 60, owner=mine) is True
    assert transcript_idle(str(t), time.time() + 60, owner=mine + 1) is None
