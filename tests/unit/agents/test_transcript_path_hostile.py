"""A hook payload's transcript_path that is no transcript (an endless device, a FIFO nobody writes, a directory)
gives no plan at once: the Stop hook never hangs or fills memory reading it."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from frontdesk.agents.campaign_plan import last_plan


def _within(seconds: float, fn: object) -> list[object]:
    out: list[object] = []
    t = threading.Thread(target=lambda: out.append(fn()), daemon=True)  # type: ignore[operator]
    t.start()
    t.join(seconds)
    return out


def test_a_transcript_path_that_is_no_file_gives_no_plan_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "t.fifo"
    os.mkfifo(fifo)
    try:
        for path in ("/dev/zero", str(fifo), str(tmp_path)):
            got = _within(30, lambda p=path: last_plan(p))
            assert got == [None], (path, got)  # [] would mean it still blocks
    finally:  # release a reader that did block (also when an assertion failed): no thread outlives the test
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
