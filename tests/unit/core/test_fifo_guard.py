"""The suite's guard against threads left blocked opening a FIFO (tests/conftest.py) sees such a thread here.

It reads the kernel's wait channel (/proc/self/task/TID/wchan); where that read said nothing useful the guard
would pass every test silently, so this checks it on the machine that runs the suite.
"""

from __future__ import annotations

import os
from pathlib import Path

from fifo_helpers import BlockedWriter, threads_in_fifo_open


def test_a_thread_blocked_opening_a_fifo_is_seen_until_released(tmp_path: Path) -> None:
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    before = threads_in_fifo_open()
    writer = BlockedWriter(fifo)  # returns once the kernel shows it waiting in open(2)
    try:
        assert {name for _, name in threads_in_fifo_open() - before} == {writer.thread.name}
    finally:
        writer.stop()
    assert threads_in_fifo_open() - before == set()
    assert writer.released.is_set()
