"""Read-ahead of metadata for the lean walks (find, du, tree) on a slow filesystem: listings and lstat batches.

ahead.py reads files ahead; a walk that only lists and stats waits for each listing (lstat + opendir +
readdir + close: four round trips on NFS or a FUSE layer) and each entry's lstat in turn. Once the walk's own
timing says the filesystem is slow (`_PROBE` calls over `_SLOW_S` on average), `Lister` lists the next
directories of the walk (innermost first: the walk's order) on the shared pool, and `Stats` stats the next
`WINDOW` entries of the directory being walked, relative to its descriptor. Everything is consumed in the
serial order and charged when the walk takes it, in the walking thread; a directory is watched (inotify) in
the walking thread before its listing is started, as `Fs.listdir` does, so a change after that is an event.
"""

from __future__ import annotations

import bisect
import os
import time
from collections import deque
from concurrent.futures import Future
from concurrent.futures import wait as wait_all
from typing import Protocol

from frontdesk.storage.ahead import _PROBE, _SLOW_S, WINDOW, _shared_pool
from frontdesk.storage.fs import Anchor, Fs, Kind, RawListing, list_raw

__all__ = ["Lister", "Stats"]

_LIST_SLOW_S = 1e-3
"""A listing (lstat + read of the directory) slower than this on average: read ahead. Local ones of a few
hundred entries take tens of microseconds; on a filesystem with round trips each is several."""
_PENDING = 2 * WINDOW

Listing = tuple[tuple[bytes, Kind], ...]


class _Frame(Protocol):
    path: bytes
    fd: int
    listing: Listing

    def descriptor(self) -> int: ...


def _lstat(dfd: int, name: bytes, path: bytes) -> os.stat_result:
    return os.lstat(path) if dfd < 0 else os.stat(name, dir_fd=dfd, follow_symlinks=False)


class Lister:
    """`fs.listdir` for one walk, with the walk's next directories listed ahead once listings are slow."""

    def __init__(self, fs: Fs, anchor: Anchor) -> None:
        self.fs, self.anchor = fs, anchor
        self._spent, self._probed, self._slow = 0.0, 0, False
        self._todo: list[deque[bytes]] = []
        self._pending: dict[bytes, tuple[Future[RawListing], bool]] = {}

    def listdir(self, path: bytes) -> Listing:
        got = self._pending.pop(path, None)
        if got is not None:
            fut, watched = got
            return self.fs.listed(path, self.fs.tkey(path, self.anchor), watched, fut.result())
        if self._slow:
            return self.fs.listdir(path, self.anchor)
        before, t0 = self.fs.counters.stat, time.perf_counter()
        try:
            return self.fs.listdir(path, self.anchor)
        finally:
            if self.fs.counters.stat != before:  # a trusted listing costs nothing: not a probe
                self._spent += time.perf_counter() - t0
                self._probed += 1
                self._slow = self._probed >= _PROBE and self._spent / self._probed > _LIST_SLOW_S

    @property
    def slow(self) -> bool:
        """Whether listings are read ahead (the walk then announces each directory's subdirectories)."""
        return self._slow

    def enter(self, dirs: list[bytes]) -> None:
        """A directory was opened: `dirs` (its subdirectories the walk will enter, in order) come next."""
        self._todo.append(deque(dirs))
        if self._slow:
            self._top_up()

    def leave(self) -> None:
        self._todo.pop()

    def _top_up(self) -> None:
        pool, fs = _shared_pool(), self.fs
        for todo in reversed(self._todo):  # the innermost directory's first: the walk goes there next
            while todo and len(self._pending) < _PENDING:
                path = todo.popleft()
                tkey = fs.tkey(path, self.anchor)
                if path in self._pending or (tkey is not None and fs.trusted(tkey)):
                    continue
                watched = fs.watch(path, tkey)  # here, before the lstat on the pool
                self._pending[path] = (pool.submit(list_raw, path, fs.cached(path)), watched)
            if len(self._pending) >= _PENDING:
                return

    def close(self) -> None:
        """Cancel what is queued and wait for what runs (what was listed ahead and not taken is not charged)."""
        futs = [f for f, _ in self._pending.values()]
        for fut in futs:
            fut.cancel()
        wait_all(futs)
        self._pending.clear()


class Stats:
    """lstat of each entry of the directory being walked, relative to its descriptor; once they are slow,
    the next `WINDOW` entries of the directory are stat'ed on the pool. Charged when taken."""

    def __init__(self, fs: Fs) -> None:
        self.fs = fs
        self._spent, self._probed, self._slow = 0.0, 0, False
        self._pending: dict[tuple[int, bytes], Future[os.stat_result]] = {}
        self._frame: _Frame | None = None
        self._names: list[bytes] = []
        self._lists: dict[int, list[bytes]] = {}
        self._next = 0

    def get(self, frame: _Frame, name: bytes) -> os.stat_result | OSError:
        """The entry's lstat (or the error it raised), charged now."""
        self.fs.counters.stat += 1
        dfd = frame.fd if frame.fd != -1 else frame.descriptor()
        prefix = frame.path if frame.path.endswith(b"/") else frame.path + b"/"
        if dfd < 0:  # no descriptor (a race): by path, serially
            try:
                return os.lstat(prefix + name)
            except OSError as exc:
                return exc
        fut = self._pending.pop((dfd, name), None)
        try:
            if fut is not None:
                return fut.result()
            if self._slow:
                self._top_up(frame, dfd, name, prefix)
                return _lstat(dfd, name, prefix + name)
            t0 = time.perf_counter()
            try:
                return _lstat(dfd, name, prefix + name)
            finally:
                self._spent += time.perf_counter() - t0
                self._probed += 1
                self._slow = self._probed >= _PROBE and self._spent / self._probed > _SLOW_S
        except OSError as exc:
            return exc
        finally:
            if fut is not None:
                self._top_up(frame, dfd, name, prefix)

    def _top_up(self, frame: _Frame, dfd: int, name: bytes, prefix: bytes) -> None:
        if frame is not self._frame:
            names = self._lists.get(dfd)
            if names is None:
                names = self._lists[dfd] = [n for n, _ in frame.listing]
            self._frame, self._names, self._next = frame, names, 0
        self._next = max(self._next, bisect.bisect_right(self._names, name))
        pool = _shared_pool()
        while self._next < len(self._names) and len(self._pending) < _PENDING:
            n = self._names[self._next]
            self._next += 1
            if (dfd, n) not in self._pending:
                self._pending[(dfd, n)] = pool.submit(_lstat, dfd, n, prefix + n)

    def leave(self, frame: _Frame) -> None:
        """Before the directory's descriptor is closed: nothing of it may still run."""
        dfd = frame.fd
        mine = [k for k in self._pending if k[0] == dfd]
        futs = [self._pending.pop(k) for k in mine]
        for fut in futs:
            fut.cancel()
        wait_all(futs)
        self._lists.pop(dfd, None)
        if frame is self._frame:
            self._frame = None

    def close(self) -> None:
        futs = list(self._pending.values())
        for fut in futs:
            fut.cancel()
        wait_all(futs)
        self._pending.clear()
