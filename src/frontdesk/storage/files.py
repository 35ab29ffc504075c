"""`fs head`, `fs tail` (with line ranges) and `fs wc` over many files in one call.

A directory argument is walked (regular files under it, symlinks not followed, sorted), so the agent's
`find . -name '*.py' | xargs wc -l` is one call. Lines are split on b"\\n" as head/tail/wc do; words are runs
of non-whitespace bytes (wc in the C locale).
"""

from __future__ import annotations

import stat
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial

from frontdesk.errors import UserError
from frontdesk.storage.ahead import NamedReader
from frontdesk.storage.fs import Entry, Fs, Kind, WalkError, roots_from, walk
from frontdesk.storage.grep import Globs
from frontdesk.storage.model import Item, LineItem, LineKind, WcCount, text_of
from frontdesk.storage.scan import contents_below, stat_root

__all__ = ["LineRange", "contents_of", "files_of", "lines", "wc"]


@dataclass(frozen=True)
class LineRange:
    """Which lines to show, 1-based and inclusive, counted from the start or (tail) from the end.

    head -n N: first=1, last=N. head -n -N: all but the last N. tail -n N: the last N. tail -n +N: from N.
    --lines A:B: A..B (either may be empty).
    """

    first: int = 1
    last: int | None = None
    from_end: int | None = None
    """Show the last `from_end` lines (tail -n N)."""
    drop_end: int = 0
    """Leave out the last `drop_end` lines (head -n -N)."""

    @classmethod
    def parse_range(cls, text: str) -> LineRange:
        a, sep, b = text.partition(":")
        if not sep or not (a or b) or not (a.isdigit() or not a) or not (b.isdigit() or not b):
            raise UserError(f"--lines: expected A:B (1-based, inclusive; either may be empty), got {text!r}")
        first, last = int(a or 1), int(b) if b else None
        if first < 1 or (last is not None and last < first):
            raise UserError(f"--lines: {text!r} is an empty range")
        return cls(first=first, last=last)

    def select(self, count: int) -> range:
        """The 0-based line indices to show of a file with `count` lines."""
        if self.from_end is not None:
            return range(max(0, count - self.from_end), count)
        stop = count - self.drop_end if self.drop_end else count
        if self.last is not None:
            stop = min(stop, self.last)
        return range(self.first - 1, max(self.first - 1, stop))


def files_of(
    fs: Fs, paths: tuple[bytes, ...], globs: Globs, errors: list[WalkError], after: bytes | None
) -> Iterator[Entry]:
    """The files named, and the regular files under the directories named (in walk order)."""
    for root, resume in roots_from(paths, after):
        for entry in walk(fs, root, errors, prune=partial(globs.pruned, root=root), after=resume):
            if entry.depth == 0 and entry.kind is not Kind.DIR:
                yield entry
            elif entry.kind is Kind.FILE and globs.wanted(entry.path, root):
                yield entry


def contents_of(
    fs: Fs, paths: tuple[bytes, ...], globs: Globs, errors: list[WalkError], after: bytes | None
) -> Iterator[tuple[bytes, bytes]]:
    """(path, contents) of the files named and of the regular files under the directories named.

    A path named is opened and read at once (one path lookup and no stat, as head and wc do), not stat'ed
    and then opened: on a filesystem that revalidates every component with its server that halves the cost.
    Named paths are read ahead when they are slow (`NamedReader`); a directory's first page is the lean walk
    of `fs grep` (`contents_below`: its files read ahead too)."""
    todo = list(roots_from(paths, after))
    named = NamedReader(fs, [root for root, _ in todo])
    try:
        for i, (root, resume) in enumerate(todo):
            yield from _contents_of_root(fs, root, resume, globs, errors, named, i)
    finally:
        named.close()


def _contents_of_root(
    fs: Fs, root: bytes, resume: bytes | None, globs: Globs, errors: list[WalkError], named: NamedReader, i: int
) -> Iterator[tuple[bytes, bytes]]:
    st = None
    if resume is None:
        try:
            data = named.read(i)
        except OSError as exc:
            errors.append(WalkError(root, exc.strerror or str(exc)))
            return
        if data is not None:
            yield root, data
            return
        st = stat_root(fs, root, errors)  # a directory (or gone since)
        if st is None:
            return
        if stat.S_ISDIR(st.st_mode):
            yield from contents_below(fs, root, st, errors, globs.tests())
            return
    for entry in walk(fs, root, errors, prune=partial(globs.pruned, root=root), after=resume, st=st):
        top = entry.depth == 0 and entry.kind is not Kind.DIR  # as files_of
        if not top and not (entry.kind is Kind.FILE and globs.wanted(entry.path, root)):
            continue
        try:
            yield entry.path, fs.read(entry.path, entry.anchor, follow=entry.depth == 0)
        except OSError as exc:
            errors.append(WalkError(entry.path, exc.strerror or str(exc)))


def _split(data: bytes) -> tuple[list[bytes], bool]:
    last_nl = data.endswith(b"\n")
    parts = data.split(b"\n")
    if last_nl or not data:
        parts.pop()
    return parts, last_nl


def lines(
    fs: Fs, paths: tuple[bytes, ...], rng: LineRange, globs: Globs, errors: list[WalkError], after: bytes | None = None
) -> Iterator[tuple[bytes, Item]]:
    """(path, LineItem) for the selected lines of every file."""
    for path, data in contents_of(fs, paths, globs, errors, after):
        parts, last_nl = _split(data)
        name = text_of(path)
        for i in rng.select(len(parts)):
            yield path, LineItem(name, i + 1, text_of(parts[i]), LineKind.LINE, last_nl or i < len(parts) - 1)


def wc(
    fs: Fs, paths: tuple[bytes, ...], globs: Globs, errors: list[WalkError], after: bytes | None = None
) -> Iterator[tuple[bytes, Item]]:
    """(path, WcCount) per file: newlines, words, bytes."""
    for path, data in contents_of(fs, paths, globs, errors, after):
        yield path, WcCount(text_of(path), data.count(b"\n"), len(data.split()), len(data))
