"""Read-ahead for the lean walk on a slow filesystem: the next files of a directory opened on a few threads.

On NFS, Lustre or a FUSE layer every open is a metadata round trip (lookup, open, release), and a walk that
opens one file at a time waits for each; ripgrep hides that latency with threads. The walk times its first
reads; when they are slow (a mean over `_SLOW_S`) it switches to this reader, which keeps up to `WINDOW`
files of the current directory being read on a small pool (os.open and os.read release the GIL) while the
walk consumes them in the same order as before. Results, errors and the operations charged are the same:
each file is charged when the walk takes it, in the walking thread. On a fast filesystem the probe's cost is
a timer around the first `_PROBE` reads, and nothing else changes.
"""

from __future__ import annotations

import bisect
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_all
from typing import TYPE_CHECKING, Protocol

from frontdesk.storage.fs import _READ_FLAGS, Fs, Kind
from frontdesk.storage.readall import _read_all, read_path

if TYPE_CHECKING:
    from frontdesk.storage.scan import NameTest

__all__ = ["NamedReader", "Reader", "WINDOW"]

WINDOW = 16
"""Files of one directory in flight at most (what an early stop may have read and not been charged)."""

_PROBE = 16
_SLOW_S = 300e-6
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()

ReadAt = Callable[[int, bytes, bytes], bytes]


class _Walked(Protocol):
    """What the reader needs of the directory being walked (scan's frame)."""

    path: bytes
    listing: tuple[tuple[bytes, Kind], ...]
    kept: dict[bytes, bytes]


def _shared_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=WINDOW, thread_name_prefix="fs-ahead")
        return _pool


def _read_file(dfd: int, name: bytes, path: bytes) -> bytes:
    """`Fs.read_at` less its charge (made in the walking thread)."""
    fd = os.open(path, _READ_FLAGS) if dfd < 0 else os.open(name, _READ_FLAGS, dir_fd=dfd)
    try:
        return _read_all(fd, 1 << 16)
    finally:
        os.close(fd)


class Reader:
    """The walk's file reader: `fs.read_at` timed for the first reads, then read-ahead when they were slow."""

    def __init__(self, fs: Fs, stack: list[_Walked], keep: NameTest | None, cut: int) -> None:
        self.fs, self.stack, self.keep, self.cut = fs, stack, keep, cut
        self.fn: ReadAt = self._probe
        self._spent, self._probed = 0.0, 0
        self._frame: _Walked | None = None
        self._dfd = -1
        self._todo: deque[bytes] = deque()
        self._pending: dict[bytes, Future[bytes]] = {}

    def _probe(self, dfd: int, name: bytes, path: bytes) -> bytes:
        t0 = time.perf_counter()
        try:
            return self.fs.read_at(dfd, name, path)
        finally:
            self._spent += time.perf_counter() - t0
            self._probed += 1
            if self._probed >= _PROBE:
                slow = self._spent / self._probed > _SLOW_S
                self.fn = self._ahead if slow else self.fs.read_at

    def _ahead(self, dfd: int, name: bytes, path: bytes) -> bytes:
        frame = self.stack[-1]
        if frame is not self._frame or dfd != self._dfd:
            self.drain()
            self._start(frame, dfd, name)
        self.fs.counters.open += 1  # charged as read_at charges it, when the walk takes the file
        fut = self._pending.pop(name, None)
        self._top_up(path[: len(path) - len(name)])
        return _read_file(dfd, name, path) if fut is None else fut.result()

    def _start(self, frame: _Walked, dfd: int, name: bytes) -> None:
        self._frame, self._dfd = frame, dfd
        files = [n for n, kind in frame.listing if kind is Kind.FILE]
        prefix = frame.path if frame.path.endswith(b"/") else frame.path + b"/"
        keep, cut, kept = self.keep, self.cut, frame.kept
        self._todo = deque(
            n
            for n in files[bisect.bisect_left(files, name) :]
            if n not in kept and (keep is None or keep(n, (prefix + n)[cut:].lstrip(b"/")))
        )

    def _top_up(self, prefix: bytes) -> None:
        pool = _shared_pool()
        while self._todo and len(self._pending) < WINDOW:
            n = self._todo.popleft()
            self._pending[n] = pool.submit(_read_file, self._dfd, n, prefix + n)

    def drain(self) -> None:
        """Cancel what is queued and wait for what runs (before its directory's descriptor is closed)."""
        for fut in self._pending.values():
            fut.cancel()
        wait_all(list(self._pending.values()))
        self._pending.clear()
        self._todo.clear()
        self._frame, self._dfd = None, -1


class NamedReader:
    """`fs.read_named` of the paths a caller named (head/wc of many files), in order: timed for the first
    reads, then the next `WINDOW` read on the pool when they were slow. Each path is charged when it is taken,
    in the calling thread, and a failure is raised there, so answers, errors and charges are the serial ones."""

    def __init__(self, fs: Fs, paths: list[bytes]) -> None:
        self.fs, self.paths = fs, paths
        self._spent, self._probed, self._slow = 0.0, 0, False
        self._pending: dict[int, Future[bytes | None]] = {}

    def read(self, i: int) -> bytes | None:
        """The contents of `paths[i]` (None: a directory); raises OSError as `fs.read_named` does."""
        fut = self._pending.pop(i, None)
        if fut is None and not self._slow:
            t0 = time.perf_counter()
            try:
                return self.fs.read_named(self.paths[i])
            finally:
                self._spent += time.perf_counter() - t0
                self._probed += 1
                self._slow = self._probed >= _PROBE and self._spent / self._probed > _SLOW_S
        self.fs.counters.open += 1  # as read_named charges it, when the path is taken
        pool = _shared_pool()
        for j in range(i + 1, min(i + 1 + WINDOW, len(self.paths))):
            if j not in self._pending:
                self._pending[j] = pool.submit(read_path, self.paths[j])
        return read_path(self.paths[i]) if fut is None else fut.result()

    def close(self) -> None:
        """Cancel what is queued and wait for what runs."""
        for fut in self._pending.values():
            fut.cancel()
        wait_all(list(self._pending.values()))
        self._pending.clear()
