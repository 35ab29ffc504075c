"""The lean walk of the search operators: regular files under a root, in `walk()` order, with no per-entry object.

A first (uncached) `fs grep` pays one open + read + close per file; what it must not pay is Python work per
entry on top (an `Entry` per name, generator layers, glob checks with no globs). `contents_below` reads the
same files as `walk()` filtered to regular files (pre-order, names sorted, symlinks below the root not
followed, unreadable directories in `errors`), using and filling the content cache a directory at a time.
Continuation cursors still go through `walk()` (a resumed page is not the hot path).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterator

from frontdesk.storage.ahead import Reader
from frontdesk.storage.ahead_meta import Lister, Stats
from frontdesk.storage.fs import Fs, Kind, WalkError, kind_of_mode

__all__ = ["NameTest", "Needle", "contents_below", "names_below", "stat_root"]

NameTest = Callable[[bytes, bytes], bool]
"""(name, path below the root) -> bool: a glob test."""

Needle = bytes | tuple[bytes, ...] | re.Pattern[bytes] | None
"""What a file must hold to be yielded: bytes, one of several byte strings, a match of a pattern; None: any."""

_Key = tuple[int, int, bytes]


def stat_root(fs: Fs, root: bytes, errors: list[WalkError]) -> os.stat_result | None:
    """A root named by the caller, followed as grep -r and du do; None (and an error) when it is missing."""
    try:
        st = os.stat(root)
    except OSError as exc:
        errors.append(WalkError(root, exc.strerror or str(exc)))
        return None
    fs.counters.stat += 1
    return st


def contents_below(
    fs: Fs,
    root: bytes,
    st: os.stat_result,
    errors: list[WalkError],
    globs: tuple[NameTest | None, NameTest | None] = (None, None),
    needle: Needle = None,
) -> Iterator[tuple[bytes, bytes]]:
    """(path, contents) of each regular file under the directory `root` (`st` its stat), in walk order.

    `globs`: (prune a directory, keep a file). `needle`: a file whose contents do not contain it (bytes, or
    none of a tuple of bytes) or match it (a pattern) is read but not yielded: the prefilter runs here."""
    cut, (prune, keep) = len(root), globs
    anchor = (st.st_dev, st.st_ino, cut)
    literal = needle if isinstance(needle, bytes) else None
    search = needle.search if isinstance(needle, re.Pattern) else _any_of(needle) if isinstance(needle, tuple) else None
    first = _open(fs, root, anchor, errors)
    stack: list[_Frame] = [] if first is None else [first]
    reader = Reader(fs, stack, keep, cut)  # type: ignore[arg-type]
    file, folder, hits = Kind.FILE, Kind.DIR, 0
    try:
        while stack:
            frame = stack[-1]
            dpath, names, kept, read_here = frame.path, frame.names, frame.kept, frame.read
            read = reader.fn  # fs.read_at, timed for the first files; read-ahead when they were slow
            prefix = dpath if dpath.endswith(b"/") else dpath + b"/"
            for name, kind in names:
                if kind is file:
                    if keep is not None and not keep(name, (prefix + name)[cut:].lstrip(b"/")):
                        continue
                    data = kept.get(name)
                    if data is None:
                        try:
                            data = read(frame.fd if frame.fd != -1 else frame.descriptor(), name, prefix + name)
                        except OSError as exc:
                            errors.append(WalkError(prefix + name, exc.strerror or str(exc)))
                            continue
                        if read_here is not None:
                            read_here.append((name, data))
                    else:
                        hits += 1
                    if (literal is not None and literal not in data) or (search is not None and search(data) is None):
                        continue
                    yield prefix + name, data
                elif kind is folder:
                    path = prefix + name
                    if prune is not None and prune(name, path[cut:].lstrip(b"/")):
                        continue
                    child = _open(fs, path, anchor, errors)
                    if child is not None:
                        stack.append(child)
                        break
            else:
                reader.drain()
                stack.pop().close()
    finally:
        reader.drain()
        fs.counters.cache_hits += hits
        for frame in stack:
            frame.close()


def _any_of(literals: tuple[bytes, ...]) -> Callable[[bytes], object | None]:
    """A test like a pattern's `search`: None when `data` holds none of `literals` (`in` runs in C)."""
    if len(literals) == 2:
        a, b = literals
        return lambda data: True if a in data or b in data else None
    return lambda data: True if any(lit in data for lit in literals) else None


def names_below(
    fs: Fs,
    root: bytes,
    st: os.stat_result,
    errors: list[WalkError],
    maxdepth: int | None = None,
    want: tuple[Callable[[bytes], object] | None, frozenset[Kind], int] = (None, frozenset(), 0),
    with_stat: bool = False,
) -> Iterator[tuple[bytes, Kind, int, os.stat_result | OSError | None]]:
    """(path, kind, depth, lstat) of `root` (depth 0) and everything under it, in `walk()` order, lean (find's).

    `want`: (a name test, the kinds wanted or none for all, the least depth): only the entries that pass are
    yielded, tested inside the walk. `with_stat`: each entry's lstat (or the error it raised), the root's by
    its path, the others relative to their directory's descriptor; else None. Listings and lstats are read
    ahead on a slow filesystem (ahead_meta)."""
    match, types, mindepth = want
    name, kind = root.rstrip(b"/").rsplit(b"/", 1)[-1] or b"/", kind_of_mode(st.st_mode)
    if mindepth == 0 and (not types or kind in types) and (match is None or match(name)):
        yield root, kind, 0, _root_lstat(fs, root) if with_stat else None
    if not stat.S_ISDIR(st.st_mode) or maxdepth == 0:
        return
    anchor = (st.st_dev, st.st_ino, len(root))
    lister, stats = Lister(fs, anchor), Stats(fs) if with_stat else None
    stack: list[tuple[_Frame, int]] = []
    _push(stack, _open(fs, root, anchor, errors, lister), 1, maxdepth, lister)
    folder = Kind.DIR
    try:
        while stack:
            frame, depth = stack[-1]
            prefix = frame.path if frame.path.endswith(b"/") else frame.path + b"/"
            shown = depth >= mindepth
            deeper = maxdepth is None or depth < maxdepth
            for name, kind in frame.names:
                if shown and (not types or kind in types) and (match is None or match(name)):
                    yield prefix + name, kind, depth, None if stats is None else stats.get(frame, name)
                if kind is folder and deeper:
                    if _push(stack, _open(fs, prefix + name, anchor, errors, lister), depth + 1, maxdepth, lister):
                        break
            else:
                stack.pop()
                lister.leave()
                if stats is not None:
                    stats.leave(frame)
                frame.close()
    finally:
        lister.close()
        if stats is not None:
            stats.close()
        for frame, _ in stack:
            frame.close()


def _root_lstat(fs: Fs, root: bytes) -> os.stat_result | OSError:
    try:
        return fs.lstat(root)
    except OSError as exc:
        return exc


def _push(
    stack: list[tuple[_Frame, int]], frame: _Frame | None, depth: int, maxdepth: int | None, lister: Lister
) -> bool:
    """A directory opened by the walk: on the stack, its subdirectories announced to the read-ahead."""
    if frame is None:
        return False
    stack.append((frame, depth))
    if not lister.slow or not (maxdepth is None or depth < maxdepth):
        lister.enter([])  # a fast filesystem: no list built per directory
        return True
    prefix = frame.path if frame.path.endswith(b"/") else frame.path + b"/"
    lister.enter([prefix + n for n, k in frame.listing if k is Kind.DIR])
    return True


class _Frame:
    """A directory being walked: its listing, its kept file contents (when trusted) and the files read in it
    to keep, and a descriptor opened when a file in it is read (files are opened relative to it: one lookup
    each, not one per path component, which matters on a filesystem that revalidates every component)."""

    __slots__ = ("fd", "fs", "key", "kept", "listing", "names", "path", "read", "root")

    def __init__(
        self, fs: Fs, path: bytes, listing: tuple[tuple[bytes, Kind], ...], key: _Key | None, root: bool
    ) -> None:
        self.fs, self.path, self.listing, self.names, self.key, self.root = fs, path, listing, iter(listing), key, root
        self.fd = -1
        self.kept = fs.content.files_in(key) if key is not None else _NOTHING
        self.read: list[tuple[bytes, bytes]] | None = [] if key is not None and fs.content.room() else None

    def descriptor(self) -> int:
        """The directory's descriptor (opened on first use; -2 when it cannot be: files then go by path)."""
        if self.fd == -1:
            try:
                flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | (0 if self.root else os.O_NOFOLLOW)
                self.fd = os.open(self.path, flags)
                self.fs.counters.open += 1
            except OSError:
                self.fd = -2  # a race, or no read right: files go by path
        return self.fd

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
        self.fd = -1
        if self.key is not None and self.read:
            self.fs.defer(self.key, self.path, self.read)
        self.read = None


_NOTHING: dict[bytes, bytes] = {}


def _open(
    fs: Fs, path: bytes, anchor: tuple[int, int, int], errors: list[WalkError], lister: Lister | None = None
) -> _Frame | None:
    try:
        listing = fs.listdir(path, anchor) if lister is None else lister.listdir(path)
    except OSError as exc:
        errors.append(WalkError(path, exc.strerror or str(exc)))
        return None
    key = (anchor[0], anchor[1], path[anchor[2] :])
    return _Frame(fs, path, listing, key if fs.trusted(key) else None, len(path) == anchor[2])
