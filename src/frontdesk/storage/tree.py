"""`fs find`, `fs tree` and `fs du`: what a tree holds, with as few stat calls as the question needs.

find takes types from the directory listing (d_type) and calls lstat only when -size, -mtime or --long need
it; tree and du need sizes, so they lstat every entry once. Semantics follow GNU find (-size rounds up to the
unit, -mtime counts whole days) and GNU du (blocks*512 by default, hard links counted once, post-order).
"""

from __future__ import annotations

import fnmatch
import math
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from frontdesk.errors import UserError
from frontdesk.storage.fs import Entry, Fs, Kind, WalkError, roots_from, walk
from frontdesk.storage.model import DirSummary, FoundPath, Item, Usage, text_of
from frontdesk.storage.scan import names_below, stat_root

__all__ = ["FindOptions", "Compare", "DuOptions", "du", "find", "tree"]

_UNITS = {"c": 1, "w": 2, "b": 512, "k": 1024, "M": 1024**2, "G": 1024**3}


@dataclass(frozen=True)
class Compare:
    """find's numeric test: +N (more than), -N (less than), N (exactly)."""

    sign: int
    value: int
    unit: int = 1

    @classmethod
    def parse(cls, text: str, flag: str, units: bool) -> Compare:
        sign = {"+": 1, "-": -1}.get(text[:1], 0)
        body = text[1:] if sign else text
        unit = 1
        if units:
            unit = 512
            if body[-1:] in _UNITS:
                unit, body = _UNITS[body[-1]], body[:-1]
        if not body.isdigit():
            raise UserError(f"{flag}: expected [+-]N{'[ckMG]' if units else ''}, got {text!r}")
        return cls(sign, int(body), unit)

    def test(self, raw: float) -> bool:
        n = math.ceil(raw / self.unit) if self.unit > 1 else math.floor(raw)
        return n > self.value if self.sign > 0 else n < self.value if self.sign < 0 else n == self.value


@dataclass(frozen=True)
class FindOptions:
    roots: tuple[bytes, ...]
    names: tuple[bytes, ...] = ()
    inames: tuple[bytes, ...] = ()
    types: frozenset[Kind] = frozenset()
    maxdepth: int | None = None
    mindepth: int = 0
    size: tuple[Compare, ...] = ()
    mtime: tuple[Compare, ...] = ()
    long: bool = False
    now: float = field(default_factory=time.time)

    def needs_stat(self) -> bool:
        return bool(self.size or self.mtime or self.long)


def _name_ok(opts: FindOptions, entry: Entry) -> bool:
    name = entry.path.rstrip(b"/").rsplit(b"/", 1)[-1] or b"/"
    if any(not fnmatch.fnmatchcase(name, p) for p in opts.names):
        return False
    return all(fnmatch.fnmatchcase(name.lower(), p.lower()) for p in opts.inames)


def _matcher(opts: FindOptions) -> Callable[[bytes], object] | None:
    """-name and -iname as one test of a name (fnmatch's own translation, compiled once): a match object or
    None, like a pattern's `match`; None: no test."""
    tests = [_name_test(p, 0) for p in opts.names] + [_name_test(p, re.IGNORECASE) for p in opts.inames]
    if not tests:
        return None
    if len(tests) == 1:
        return tests[0]
    return lambda name: all(t(name) is not None for t in tests) or None


def _name_test(pattern: bytes, flags: int) -> Callable[[bytes], object]:
    """`*SUFFIX` (the common -name '*.py') as a search for the suffix at the end: no `.*` to backtrack."""
    rest = pattern[1:]
    if pattern.startswith(b"*") and rest and not any(c in rest for c in b"*?["):
        return re.compile(re.escape(rest) + rb"\Z", flags).search
    return re.compile(_translate(pattern), flags).match


def _translate(pattern: bytes) -> bytes:
    return fnmatch.translate(pattern.decode("latin-1")).encode("latin-1")  # as fnmatchcase does for bytes


def _find_fast(fs: Fs, opts: FindOptions, errors: list[WalkError]) -> Iterator[tuple[bytes, Item]]:
    """The first page of a find with no stat test: no Entry per name, patterns compiled once."""
    want = (_matcher(opts), opts.types, opts.mindepth)
    for root in opts.roots:
        st = stat_root(fs, root, errors)
        if st is None:
            continue
        for path, kind, depth, _ in names_below(fs, root, st, errors, opts.maxdepth, want):
            yield path, FoundPath(text_of(path), kind.value, depth)


def find(
    fs: Fs, opts: FindOptions, errors: list[WalkError], after: bytes | None = None
) -> Iterator[tuple[bytes, Item]]:
    """(path, FoundPath) in walk order for every entry that passes the tests."""
    if after is None and not opts.needs_stat():
        yield from _find_fast(fs, opts, errors)
        return
    for root, resume in roots_from(opts.roots, after):
        for entry in walk(fs, root, errors, maxdepth=opts.maxdepth, after=resume):
            if entry.depth < opts.mindepth or (opts.types and entry.kind not in opts.types):
                continue
            if not _name_ok(opts, entry):
                continue
            size: int | None = None
            mtime: float | None = None
            if opts.needs_stat():
                try:
                    st = fs.lstat(entry.path)
                except OSError as exc:
                    errors.append(WalkError(entry.path, exc.strerror or str(exc)))
                    continue
                size, mtime = st.st_size, st.st_mtime
                if not all(c.test(st.st_size) for c in opts.size):
                    continue
                if not all(c.test((opts.now - st.st_mtime) / 86400) for c in opts.mtime):
                    continue
            yield entry.path, FoundPath(text_of(entry.path), entry.kind.value, entry.depth, size, mtime)


@dataclass
class _Sum:
    files: int = 0
    dirs: int = 0
    bytes: int = 0


@dataclass(frozen=True)
class DuOptions:
    roots: tuple[bytes, ...]
    summarize: bool = False
    apparent: bool = False
    all_files: bool = False
    maxdepth: int | None = None


def _sizes(fs: Fs, root: bytes, errors: list[WalkError], apparent: bool) -> Iterator[tuple[Entry, int]]:
    """Each entry under `root` (itself first) with its size, hard links once: the lean walk's lstats (read
    ahead on a slow filesystem), relative to each directory's descriptor."""
    seen: set[tuple[int, int]] = set()
    top = stat_root(fs, root, errors)
    if top is None:
        return
    for path, kind, depth, st in names_below(fs, root, top, errors, with_stat=True):
        if isinstance(st, OSError) or st is None:
            errors.append(WalkError(path, (st.strerror or str(st)) if st is not None else "no stat"))
            continue
        if st.st_nlink > 1 and kind is not Kind.DIR:
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
        yield Entry(path, kind, depth), (st.st_size if apparent else st.st_blocks * 512)


def _parent(path: bytes, root: bytes) -> bytes:
    if len(path) <= len(root):
        return b""
    return path.rsplit(b"/", 1)[0] or b"/"


def du(fs: Fs, opts: DuOptions, errors: list[WalkError]) -> list[Usage]:
    """Post-order usage of each directory (and each file with all_files), like `du [-s] [-a] [-d N]`."""
    out: list[Usage] = []
    for root in opts.roots:
        totals: dict[bytes, int] = {}
        every: list[Entry] = []
        for entry, size in _sizes(fs, root, errors, opts.apparent):
            totals[entry.path] = totals.get(entry.path, 0) + size
            every.append(entry)
        for entry in sorted(every, key=lambda e: e.depth, reverse=True):  # children first
            parent = _parent(entry.path, root)
            if entry.depth and parent in totals:
                totals[parent] += totals[entry.path]
        shown = [e for e in every if e.kind is Kind.DIR or opts.all_files or e.depth == 0]
        for entry in _postorder(shown):
            if opts.summarize and entry.depth:
                continue
            if opts.maxdepth is not None and entry.depth > opts.maxdepth:
                continue
            out.append(Usage(text_of(entry.path), totals[entry.path]))
    return out


def _postorder(entries: list[Entry]) -> list[Entry]:
    """Pre-order entries rearranged so that each directory follows its subtree (du's order)."""
    out: list[Entry] = []
    stack: list[Entry] = []
    for entry in entries:
        while stack and stack[-1].depth >= entry.depth:
            out.append(stack.pop())
        stack.append(entry)
    out.extend(reversed(stack))
    return out


def tree(fs: Fs, roots: tuple[bytes, ...], depth: int, errors: list[WalkError]) -> list[DirSummary]:
    """Per directory down to `depth`: files, directories and the apparent bytes of the files beneath it."""
    out: list[DirSummary] = []
    for root in roots:
        sums: dict[bytes, _Sum] = {}
        dirs: list[Entry] = []
        for entry, size in _sizes(fs, root, errors, apparent=True):
            if entry.kind is Kind.DIR:
                sums[entry.path] = _Sum()
                if entry.depth <= depth:
                    dirs.append(entry)
            p = _parent(entry.path, root)
            while p:  # credit every ancestor
                s = sums.get(p)
                if s is not None:
                    s.bytes += 0 if entry.kind is Kind.DIR else size  # data, not directory blocks (FS-specific)
                    s.dirs += entry.kind is Kind.DIR
                    s.files += entry.kind is not Kind.DIR
                p = _parent(p, root)
            if entry.depth == 0 and entry.kind is not Kind.DIR:
                sums.setdefault(entry.path, _Sum()).bytes += size
        for entry in dirs:
            s = sums[entry.path]
            out.append(DirSummary(text_of(entry.path), entry.depth, s.files, s.dirs, s.bytes))
    return out
