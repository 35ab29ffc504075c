"""The live inbox's idle check reads a transcript path the session named itself: a FIFO nobody writes, a device
or a directory gives "unknown" at once, never a gateway blocked in open() (its event loop runs this check)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from frontdesk.agents.channels.inbox import transcript_idle


def _within(seconds: float, path: str) -> list[object]:
    out: list[object] = []
    t = threading.Thread(target=lambda: out.append(transcript_idle(path, time.time() + 60)), daemon=True)
    t.start()
    t.join(seconds)
    return out


def test_a_transcript_path_that_is_no_regular_file_is_unknown_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "t.fifo"
    os.mkfifo(fifo)
    try:
        for path in (str(fifo), "/dev/zero", str(tmp_path)):
            assert _within(30, path) == [None], path  # [] would mean it still blocks
    finally:  # release a reader that did block (also when an assertion failed): no thread outlives the test
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass


def test_a_real_transcript_is_still_read(tmp_path: Path) -> None:
    t = tmp_path / "t.jsonl"
    t.write_text('{"type": "system", "subtype": "turn_duration"}\n')
    assert transcript_idle(str(t), time.time() + 60) is True
