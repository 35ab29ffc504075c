"""The I/O edge of the storage operators: directory listings, lstat and reads, counted and cached.

Every metadata operation the operators make goes through `Fs`, which counts it (`Counters`) so the benchmark
and the answers can say what a question cost. `Fs` keeps a listing cache: a directory's names and types are
reused only while the directory's own (dev, ino, mtime_ns, ctime_ns) are unchanged, which one lstat checks.
Creating, deleting or renaming an entry changes the directory's mtime and ctime, and a chmod/chown changes
its ctime, so a cached listing is never served after a change (and never across identities: one `Fs` per
caller). File contents are not cached; a file is always opened and read afresh.

Paths are bytes end to end (names that are not UTF-8 are kept exactly). The walk is pre-order with the names
of each directory sorted bytewise, never follows symbolic links below the roots, and reports unreadable
directories as errors without stopping.
"""

from __future__ import annotations

import enum
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

__all__ = ["Counters", "Entry", "Fs", "Kind", "WalkError", "join", "roots_from", "walk"]


class Kind(enum.Enum):
    """What a directory entry is (from d_type, or lstat when the filesystem does not say)."""

    FILE = "f"
    DIR = "d"
    LINK = "l"
    OTHER = "o"


@dataclass
class Counters:
    """Filesystem calls made by the operators for one answer (or over a worker's life)."""

    readdir: int = 0
    """Directories opened and read (opendir + getdents + close)."""
    stat: int = 0
    """lstat/stat calls (including the one that validates a cached listing)."""
    open: int = 0
    """Files opened for reading."""
    cache_hits: int = 0
    """Listings served from the cache after their directory was found unchanged."""

    def as_dict(self) -> dict[str, int]:
        return {"readdir": self.readdir, "stat": self.stat, "open": self.open, "cache_hits": self.cache_hits}


@dataclass(frozen=True)
class Entry:
    """One path met by a walk."""

    path: bytes
    kind: Kind
    depth: int


@dataclass(frozen=True)
class WalkError:
    """A path the walk could not read (permission, vanished, loop): reported, never fatal."""

    path: bytes
    message: str


_Key = tuple[int, int, int, int]


@dataclass
class Fs:
    """Counted filesystem access with a validated listing cache (one instance per identity)."""

    counters: Counters = field(default_factory=Counters)
    cache_entries: int = 20000
    _listings: dict[bytes, tuple[_Key, tuple[tuple[bytes, Kind], ...]]] = field(default_factory=dict)

    def lstat(self, path: bytes) -> os.stat_result:
        self.counters.stat += 1
        return os.lstat(path)

    def read(self, path: bytes, limit: int | None = None) -> bytes:
        """The file's bytes (at most `limit`); never follows a symlink swapped in for the last component."""
        self.counters.open += 1
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NOCTTY | os.O_NONBLOCK)
        try:
            with os.fdopen(fd, "rb", closefd=False) as fh:
                return fh.read() if limit is None else fh.read(limit)
        finally:
            os.close(fd)

    def listdir(self, path: bytes) -> tuple[tuple[bytes, Kind], ...]:
        """Sorted (name, kind) of a directory; raises OSError when it cannot be read."""
        st = self.lstat(path)
        key = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
        hit = self._listings.get(path)
        if hit is not None and hit[0] == key:
            self.counters.cache_hits += 1
            return hit[1]
        self.counters.readdir += 1
        names: list[tuple[bytes, Kind]] = []
        with os.scandir(path) as it:
            for de in it:
                names.append((de.name, self._kind(de)))
        names.sort()
        listing = tuple(names)
        if len(self._listings) >= self.cache_entries:
            self._listings.pop(next(iter(self._listings)))
        self._listings[path] = (key, listing)
        return listing

    def _kind(self, de: os.DirEntry[bytes]) -> Kind:
        try:
            if de.is_symlink():
                return Kind.LINK
            if de.is_dir(follow_symlinks=False):
                return Kind.DIR
            if de.is_file(follow_symlinks=False):
                return Kind.FILE
        except OSError:
            pass
        return Kind.OTHER

    def kind_of(self, path: bytes) -> Kind:
        return kind_of_mode(self.lstat(path).st_mode)


def kind_of_mode(mode: int) -> Kind:
    if stat.S_ISLNK(mode):
        return Kind.LINK
    if stat.S_ISDIR(mode):
        return Kind.DIR
    if stat.S_ISREG(mode):
        return Kind.FILE
    return Kind.OTHER


def join(parent: bytes, name: bytes) -> bytes:
    return parent + name if parent.endswith(b"/") else parent + b"/" + name


def _before(path: bytes, after: bytes) -> bool:
    """Whether `path` and its whole subtree come before `after` in walk order (so can be skipped)."""
    a, b = path.split(b"/"), after.split(b"/")
    return a < b and b[: len(a)] != a


def _above(path: bytes, after: bytes) -> bool:
    """Whether `path` is a strict ancestor of `after` (walked through, not shown again on resume)."""
    a, b = path.split(b"/"), after.split(b"/")
    return len(a) < len(b) and b[: len(a)] == a


def roots_from(roots: tuple[bytes, ...], after: bytes | None) -> Iterator[tuple[bytes, bytes | None]]:
    """(root, where to resume in it): roots before the one holding `after` are done, later ones whole."""
    if after is None:
        yield from ((r, None) for r in roots)
        return
    found = False
    for root in roots:
        if found:
            yield root, None
        elif after == root or after.startswith(root.rstrip(b"/") + b"/"):
            found = True
            yield root, after


def walk(
    fs: Fs,
    root: bytes,
    errors: list[WalkError],
    *,
    maxdepth: int | None = None,
    prune: Callable[[Entry], bool] | None = None,
    after: bytes | None = None,
) -> Iterator[Entry]:
    """Pre-order walk of `root` (itself at depth 0), names sorted, symlinks not followed below the root.

    `prune(entry)` true for a directory: neither it nor its subtree is yielded. `after`: skip every path that
    comes before it in walk order (a continuation cursor), still yielding `after` itself if met again.
    """
    try:
        st = os.stat(root)  # a root given by the caller is followed, as grep -r and du do
        fs.counters.stat += 1
    except OSError as exc:
        errors.append(WalkError(root, exc.strerror or str(exc)))
        return
    stack: list[Entry] = [Entry(root, kind_of_mode(st.st_mode), 0)]
    while stack:
        entry = stack.pop()
        if after is not None and _before(entry.path, after):
            continue
        if entry.depth > 0 and prune is not None and prune(entry):
            continue
        if after is None or not _above(entry.path, after):
            yield entry
        if entry.kind is not Kind.DIR or (maxdepth is not None and entry.depth >= maxdepth):
            continue
        try:
            listing = fs.listdir(entry.path)
        except OSError as exc:
            errors.append(WalkError(entry.path, exc.strerror or str(exc)))
            continue
        for name, kind in reversed(listing):
            stack.append(Entry(join(entry.path, name), kind, entry.depth + 1))
