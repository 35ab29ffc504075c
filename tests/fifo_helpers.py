"""A canary for "the gateway opened a path it must not": a root thread blocked opening a FIFO for writing.

The check means something only once the thread waits in open(2) for a reader (the kernel names that wait
`wait_for_partner`), so the constructor waits for it. `stop` lets the thread go before its FIFO is removed:
a thread left blocked there would, on the next signal, retry its open on a path that is gone and raise in
whatever test runs then.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path


class BlockedWriter:
    """A root thread blocked opening `fifo` for writing; `released` is set once some reader opened it."""

    def __init__(self, fifo: Path) -> None:
        self.fifo = fifo
        self.released = threading.Event()
        self.thread = threading.Thread(target=self._open, daemon=True)
        self.thread.start()
        wchan = Path(f"/proc/self/task/{self.thread.native_id}/wchan")
        for _ in range(1000):
            if wchan.read_text() == "wait_for_partner":
                return
            time.sleep(0.01)
        raise AssertionError(f"the writer never waited on the FIFO (wchan {wchan.read_text()!r})")

    def _open(self) -> None:
        fd = os.open(self.fifo, os.O_WRONLY)  # blocks until a reader opens the FIFO
        self.released.set()
        os.close(fd)

    def stop(self) -> None:
        """Release the thread ourselves (open for reading) until it has ended."""
        for _ in range(100):
            if not self.thread.is_alive():
                return
            os.close(os.open(self.fifo, os.O_RDONLY | os.O_NONBLOCK))
            self.thread.join(0.1)
        raise AssertionError("the FIFO's writer did not end")


def threads_in_fifo_open() -> set[tuple[int, str]]:
    """(ident, name) of this process's threads waiting in open(2) for a FIFO's other end (`wait_for_partner`)."""
    stuck = set()
    for t in threading.enumerate():
        try:
            wchan = Path(f"/proc/self/task/{t.native_id}/wchan").read_text()
        except OSError:
            continue  # ended meanwhile
        if wchan == "wait_for_partner":
            stuck.add((t.ident or 0, t.name))
    return stuck
