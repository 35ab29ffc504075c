"""The live inbox's idle check parses the tail of a transcript the session writes: a line nested 60,000 deep
raised RecursionError (not a ValueError) out of the check into the gateway; it is a line like any torn one."""

from __future__ import annotations

import time
from pathlib import Path

from frontdesk.agents.channels.inbox import transcript_idle


def test_a_deeply_nested_line_is_skipped(tmp_path: Path) -> None:
    t = tmp_path / "t.jsonl"
    t.write_text('{"type": "system", "subtype": "turn_duration"}\n' + "[" * 60000 + "\n")
    assert transcript_idle(str(t), time.time() + 60) is True
