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
import operator
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from frontdesk.storage.content import ContentCache
from frontdesk.storage.readall import _read_all, read_path
from frontdesk.storage.watch import Watcher

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


Anchor = tuple[int, int, int]


@dataclass(frozen=True)
class Entry:
    """One path met by a walk."""

    path: bytes
    kind: Kind
    depth: int
    anchor: Anchor | None = None
    """The walk's root identity (dev, ino, len(root path)): keys the inotify-trusted caches."""


@dataclass(frozen=True)
class WalkError:
    """A path the walk could not read (permission, vanished, loop): reported, never fatal."""

    path: bytes
    message: str


_Key = tuple[int, int, int, int]
_TKey = tuple[int, int, bytes]
"""(root dev, root ino, path below the root): below a root the walk follows no symlink, so this names one
directory for as long as every directory on the way is watched."""


@dataclass
class Fs:
    """Counted filesystem access with a validated listing cache (one instance per identity).

    With a `Watcher` (inotify), a directory listed since it was watched is trusted without any stat until
    an event arrives for it, and the contents of its single-link files are kept (up to `content_bytes`):
    repeating a question over an unchanged tree then costs no metadata operation at all. `begin()` drains
    the events at the start of each question.
    """

    counters: Counters = field(default_factory=Counters)
    cache_entries: int = 20000
    watcher: Watcher | None = None
    content_bytes: int = 256 * 1024 * 1024
    content: ContentCache = field(init=False)
    _listings: dict[bytes, tuple[_Key, tuple[tuple[bytes, Kind], ...]]] = field(default_factory=dict)
    _trusted: dict[_TKey, tuple[tuple[bytes, Kind], ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.content = ContentCache(self.content_bytes)

    def begin(self) -> None:
        """Forget whatever changed since the last question (inotify events)."""
        if self.watcher is None:
            return
        self.settle()
        changed = self.watcher.changed()
        if changed is None:
            self._trusted.clear()
            self.content.clear()
            return
        if not changed:
            return
        # a changed directory takes its whole subtree with it: a rename above changes what paths below mean
        prefixes: dict[tuple[int, int], list[bytes]] = {}
        for dev, ino, rel in changed:
            prefixes.setdefault((dev, ino), []).append(rel)
        for tkey in [k for k in self._trusted if any(_under(k[2], r) for r in prefixes.get(k[:2], ()))]:
            self._trusted.pop(tkey, None)
            self.watcher.unwatch(tkey)
            self.content.drop(tkey)

    def settle(self) -> None:
        """The content cache's bookkeeping (run by the worker after it sent an answer, and by `begin()`
        before it drains the events: a write after the watch was set is an event, which drops it again)."""
        self.content.settle(self.trusted)

    def lstat(self, path: bytes) -> os.stat_result:
        self.counters.stat += 1
        return os.lstat(path)

    def read(self, path: bytes, anchor: Anchor | None = None, follow: bool = False) -> bytes:
        """The file's bytes; follows a symlink only when asked (a path the caller named, as grep -r does).

        A file costs open + close in metadata operations (plus one fstat when it may be kept in the content
        cache), and nothing while its directory is watched and quiet."""
        tkey = self.tkey(path, anchor)
        parent, name = None, b""
        if tkey is not None and tkey[2]:
            rel, _, name = tkey[2].rpartition(b"/")
            parent = (tkey[0], tkey[1], rel) if self.trusted((tkey[0], tkey[1], rel)) else None
        if parent is not None:
            data = self.content.files_in(parent).get(name)
            if data is not None:
                self.counters.cache_hits += 1
                return data
        self.counters.open += 1
        nofollow = 0 if follow else os.O_NOFOLLOW
        fd = os.open(path, os.O_RDONLY | nofollow | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            data = _read_all(fd, 1 << 16)
            if parent is not None and self.content.room():
                self.counters.stat += 1
                if os.fstat(fd).st_nlink == 1:
                    self.content.keep(parent, name, data)
            return data
        finally:
            os.close(fd)

    def read_at(self, dfd: int, name: bytes, path: bytes) -> bytes:
        """A regular file met by a lean walk, opened relative to its directory's descriptor (or by `path`
        when `dfd` is -1); no symlink followed. A short read of a regular file is its end (POSIX)."""
        self.counters.open += 1
        fd = os.open(path, _READ_FLAGS) if dfd < 0 else os.open(name, _READ_FLAGS, dir_fd=dfd)
        try:
            return _read_all(fd, 1 << 16)
        finally:
            os.close(fd)

    def defer(self, key: _TKey, dpath: bytes, files: list[tuple[bytes, bytes]]) -> None:
        """Files read in a trusted directory, to be kept by `settle()` (its checks are charged now)."""
        queued = self.content.defer(key, dpath, files)
        if queued:
            self.counters.stat += queued
            self.counters.open += 1

    def read_named(self, path: bytes) -> bytes | None:
        """A path the caller named (followed): its contents, or None when it is a directory (read(2) says
        EISDIR), without a stat: head/wc of named files cost open + read + close, as head's own."""
        self.counters.open += 1
        return read_path(path)

    def trusted(self, key: _TKey) -> bool:
        """Whether a directory's listing (and the kept contents of its files) is trusted without a stat."""
        return key in self._trusted

    def listdir(self, path: bytes, anchor: Anchor | None = None) -> tuple[tuple[bytes, Kind], ...]:
        """Sorted (name, kind) of a directory; raises OSError when it cannot be read."""
        tkey = self.tkey(path, anchor)
        if tkey is not None and tkey in self._trusted:
            self.counters.cache_hits += 1
            return self._trusted[tkey]
        watched = self.watch(path, tkey)
        return self.listed(path, tkey, watched, list_raw(path, self._listings.get(path)))

    @staticmethod
    def tkey(path: bytes, anchor: Anchor | None) -> _TKey | None:
        """The key of a directory below a walk's root (None outside a walk)."""
        return None if anchor is None else (anchor[0], anchor[1], path[anchor[2] :])

    def watch(self, path: bytes, tkey: _TKey | None) -> bool:
        """Watch a directory about to be listed (before its lstat: a change from then on is an event)."""
        return tkey is not None and self.watcher is not None and self.watcher.watch(path, tkey)

    def cached(self, path: bytes) -> tuple[_Key, tuple[tuple[bytes, Kind], ...]] | None:
        """The listing kept for `path` and the (dev, ino, mtime, ctime) it was read at."""
        return self._listings.get(path)

    def listed(self, path: bytes, tkey: _TKey | None, watched: bool, raw: RawListing) -> tuple[tuple[bytes, Kind], ...]:
        """Charge and keep what `list_raw` found (in the walking thread; the read-ahead runs `list_raw` on its
        pool after `watch`): one lstat, a readdir unless the kept listing was still valid."""
        self.counters.stat += 1
        if raw.scanned:
            self.counters.readdir += 1
        if raw.error is not None or raw.listing is None or raw.key is None:
            raise raw.error or OSError(f"{path!r}: no listing")
        if not raw.scanned:
            self.counters.cache_hits += 1
        else:
            if len(self._listings) >= self.cache_entries:
                self._listings.pop(next(iter(self._listings)))
            self._listings[path] = (raw.key, raw.listing)
        if watched and tkey is not None:
            self._trusted[tkey] = raw.listing
        return raw.listing

    def kind_of(self, path: bytes) -> Kind:
        return kind_of_mode(self.lstat(path).st_mode)


@dataclass(frozen=True, slots=True)
class RawListing:
    """What one lstat + readdir of a directory found, before it is charged (`Fs.listed`)."""

    key: _Key | None
    listing: tuple[tuple[bytes, Kind], ...] | None
    scanned: bool
    error: OSError | None = None


def list_raw(path: bytes, cached: tuple[_Key, tuple[tuple[bytes, Kind], ...]] | None) -> RawListing:
    """lstat `path`, then reuse `cached` when the directory is unchanged, else read it (no state touched:
    safe on a pool thread)."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return RawListing(None, None, False, exc)
    key = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
    if cached is not None and cached[0] == key:
        return RawListing(key, cached[1], False)
    try:
        return RawListing(key, _scan_dir(path), True)
    except OSError as exc:
        return RawListing(key, None, True, exc)


def _scan_dir(path: bytes) -> tuple[tuple[bytes, Kind], ...]:
    file, folder, link, other = Kind.FILE, Kind.DIR, Kind.LINK, Kind.OTHER
    with os.scandir(path) as it:
        entries = list(it)
    try:  # d_type answers all three without a system call; the commonest first, no call per entry
        names = [
            (de.name, file if de.is_file(follow_symlinks=False) else folder if de.is_dir(follow_symlinks=False)
             else link if de.is_symlink() else other)
            for de in entries
        ]  # fmt: skip
    except OSError:  # no d_type here and an entry gone before its lstat
        names = [(de.name, _kind(de)) for de in entries]
    names.sort(key=_FIRST)  # names are unique: the same order as sorting the pairs, without comparing them
    return tuple(names)


def _kind(de: os.DirEntry[bytes]) -> Kind:
    try:
        if de.is_file(follow_symlinks=False):
            return Kind.FILE
        if de.is_dir(follow_symlinks=False):
            return Kind.DIR
        if de.is_symlink():
            return Kind.LINK
    except OSError:
        pass
    return Kind.OTHER


_FIRST = operator.itemgetter(0)
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC


def _under(rel: bytes, top: bytes) -> bool:
    return rel == top or rel.startswith(top + b"/") or top == b""


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
    st: os.stat_result | None = None,
) -> Iterator[Entry]:
    """Pre-order walk of `root` (itself at depth 0), names sorted, symlinks not followed below the root.

    `prune(entry)` true for a directory: neither it nor its subtree is yielded. `after`: skip every path that
    comes before it in walk order (a continuation cursor), still yielding `after` itself if met again.
    """
    if st is None:  # `st`: the root's stat when the caller has it already
        try:
            st = os.stat(root)  # a root given by the caller is followed, as grep -r and du do
            fs.counters.stat += 1
        except OSError as exc:
            errors.append(WalkError(root, exc.strerror or str(exc)))
            return
    anchor = (st.st_dev, st.st_ino, len(root))
    stack: list[Entry] = [Entry(root, kind_of_mode(st.st_mode), 0, anchor)]
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
            listing = fs.listdir(entry.path, anchor)
        except OSError as exc:
            errors.append(WalkError(entry.path, exc.strerror or str(exc)))
            continue
        for name, kind in reversed(listing):
            stack.append(Entry(join(entry.path, name), kind, entry.depth + 1, anchor))
