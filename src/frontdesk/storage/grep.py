"""`fs grep`: recursive search with ripgrep's file rules and grep's line output.

Files: every regular file under the roots (hidden ones too, no ignore files: `rg -uu`), symlinks below a root
not followed (`grep -r`, `rg`), binary files (a NUL byte anywhere) skipped silently (`grep -rI`, `rg`). Globs
prune: `-g '!dir'` / `--exclude-dir` never enter the directory; `-g GLOB` / `--include` keep only files
whose name (or, for a glob with a slash, path under the root) matches. The pattern is a Python regular
expression over bytes (ripgrep's syntax for the common cases), or a fixed string with `-F`.
"""

from __future__ import annotations

import fnmatch
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial

from frontdesk.storage.fs import Anchor, Entry, Fs, Kind, WalkError, roots_from, walk
from frontdesk.storage.literals import lines_safe, required_literals
from frontdesk.storage.model import FileCount, Item, LineItem, LineKind, text_of
from frontdesk.storage.scan import NameTest, Needle, contents_below, stat_root

__all__ = ["GrepOptions", "Globs", "grep"]


@dataclass(frozen=True)
class Globs:
    """Which files and directories a recursive operator looks at (rg -g, grep --include/--exclude[-dir])."""

    include: tuple[bytes, ...] = ()
    exclude: tuple[bytes, ...] = ()
    exclude_dir: tuple[bytes, ...] = ()

    @classmethod
    def parse(cls, globs: list[str], include: list[str], exclude: list[str], exclude_dir: list[str]) -> Globs:
        enc = [g.encode("utf-8", "surrogateescape") for g in globs]
        neg = tuple(g[1:] for g in enc if g.startswith(b"!"))
        return cls(
            include=tuple(g for g in enc if not g.startswith(b"!"))
            + tuple(g.encode("utf-8", "surrogateescape") for g in include),
            exclude=neg + tuple(g.encode("utf-8", "surrogateescape") for g in exclude),
            exclude_dir=neg + tuple(g.encode("utf-8", "surrogateescape") for g in exclude_dir),
        )

    @staticmethod
    def _hit(pattern: bytes, name: bytes, rel: bytes) -> bool:
        return fnmatch.fnmatchcase(rel if b"/" in pattern else name, pattern.strip(b"/"))

    def prunes(self, name: bytes, rel: bytes) -> bool:
        """A directory (name, path below the root) excluded by a glob."""
        return any(self._hit(g, name, rel) for g in self.exclude_dir)

    def keeps(self, name: bytes, rel: bytes) -> bool:
        """A file (name, path below the root) the globs let through."""
        if any(self._hit(g, name, rel) for g in self.exclude):
            return False
        return not self.include or any(self._hit(g, name, rel) for g in self.include)

    def tests(self) -> tuple[NameTest | None, NameTest | None]:
        """(prunes, keeps) for the lean walk, None where no glob applies."""
        return (self.prunes if self.exclude_dir else None, self.keeps if self.include or self.exclude else None)

    def pruned(self, entry: Entry, root: bytes) -> bool:
        """A directory excluded by a glob (never entered)."""
        if entry.kind is not Kind.DIR or not self.exclude_dir:
            return False
        name, rel = entry.path.rsplit(b"/", 1)[-1], entry.path[len(root) :].lstrip(b"/")
        return any(self._hit(g, name, rel) for g in self.exclude_dir)

    def wanted(self, path: bytes, root: bytes) -> bool:
        """A file the globs let through."""
        name, rel = path.rsplit(b"/", 1)[-1], path[len(root) :].lstrip(b"/")
        if any(self._hit(g, name, rel) for g in self.exclude):
            return False
        return not self.include or any(self._hit(g, name, rel) for g in self.include)


_PLAIN = re.compile(rb"[A-Za-z0-9_ \-:=,;'\"/<>@#%&~`!]+")
"""Bytes that mean themselves in a Python regular expression."""


@dataclass(frozen=True)
class GrepOptions:
    pattern: bytes
    roots: tuple[bytes, ...]
    fixed: bool = False
    ignore_case: bool = False
    invert: bool = False
    word: bool = False
    files_with_matches: bool = False
    count: bool = False
    before: int = 0
    after: int = 0
    max_count: int | None = None
    globs: Globs = Globs()

    def literal(self) -> bytes | None:
        """The pattern as plain bytes when every match must contain it (no metacharacter, case kept)."""
        if self.invert or self.ignore_case or not self.pattern:
            return None
        if self.fixed:
            return None if b"\n" in self.pattern else self.pattern
        return self.pattern if _PLAIN.fullmatch(self.pattern) else None

    def source(self) -> tuple[bytes, int]:
        """The regular expression searched (with -F and -w applied) and its flags."""
        pat = re.escape(self.pattern) if self.fixed else self.pattern
        if self.word:
            pat = rb"(?<!\w)(?:" + pat + rb")(?!\w)"
        return pat, re.MULTILINE | (re.IGNORECASE if self.ignore_case else 0)

    def prefilter(self) -> bytes | tuple[bytes, ...] | None:
        """What a file must contain to be worth a regex search: the pattern itself when it is plain bytes,
        else the literals every match holds (one of them); None when nothing is known (or with -v)."""
        literal = self.literal()
        if literal is not None or self.invert:
            return literal
        found = required_literals(*self.source())
        return found[0] if found is not None and len(found) == 1 else found

    def regex(self) -> re.Pattern[bytes]:
        pat, flags = self.source()
        try:
            return re.compile(pat, flags)
        except re.error as exc:
            from frontdesk.errors import UserError

            raise UserError(f"bad pattern: {exc}") from None


def _contents(
    fs: Fs, opts: GrepOptions, errors: list[WalkError], after: bytes | None, needle: Needle
) -> Iterator[tuple[bytes, bytes]]:
    """(path, contents) of every file searched that may match `needle`, in walk order."""
    globs = opts.globs
    tests = globs.tests()
    for root, resume in roots_from(opts.roots, after):
        if resume is None:
            st = stat_root(fs, root, errors)
            if st is not None and stat.S_ISDIR(st.st_mode):
                yield from contents_below(fs, root, st, errors, tests, needle)
            elif st is not None and stat.S_ISREG(st.st_mode):
                yield from _read(fs, root, None, True, errors)
            continue
        for entry in walk(fs, root, errors, prune=partial(globs.pruned, root=root), after=resume):
            if entry.kind is Kind.FILE and (entry.depth == 0 or globs.wanted(entry.path, root)):
                yield from _read(fs, entry.path, entry.anchor, entry.depth == 0, errors)


def _read(
    fs: Fs, path: bytes, anchor: Anchor | None, follow: bool, errors: list[WalkError]
) -> Iterator[tuple[bytes, bytes]]:
    try:
        yield path, fs.read(path, anchor, follow)
    except OSError as exc:
        errors.append(WalkError(path, exc.strerror or str(exc)))


def _matching_lines(lines: list[bytes], rx: re.Pattern[bytes], opts: GrepOptions, data: bytes | None) -> list[int]:
    """Indices of the selected lines. With `data` (a pattern `lines_safe`, no -v): one finditer over the
    whole file, each match's line; a match that spans a newline sends it back to a search per line."""
    hits = None if data is None else _lines_of_matches(data, len(lines), rx)
    if hits is None:
        hits = [i for i, line in enumerate(lines) if (rx.search(line) is not None) != opts.invert]
    return hits if opts.max_count is None else hits[: opts.max_count]


def _lines_of_matches(data: bytes, count: int, rx: re.Pattern[bytes]) -> list[int] | None:
    hits: list[int] = []
    line, seen = 0, 0
    for m in rx.finditer(data):
        start, end = m.span()
        if data.find(b"\n", start, end) >= 0:
            return None
        line += data.count(b"\n", seen, start)
        seen = start
        if line >= count:
            break  # an empty match after the last newline: no line there
        if not hits or hits[-1] != line:
            hits.append(line)
    return hits


def _with_context(path: str, lines: list[bytes], hits: list[int], opts: GrepOptions, last_nl: bool) -> Iterator[Item]:
    shown: dict[int, LineKind] = {}
    for i in hits:
        for j in range(max(0, i - opts.before), min(len(lines), i + opts.after + 1)):
            shown.setdefault(j, LineKind.CONTEXT)
        shown[i] = LineKind.MATCH
    for j in sorted(shown):
        nl = last_nl or j < len(lines) - 1
        yield LineItem(path, j + 1, text_of(lines[j]), shown[j], nl)


def grep(
    fs: Fs, opts: GrepOptions, errors: list[WalkError], after: bytes | None = None
) -> Iterator[tuple[bytes, Item]]:
    """(path, item) in walk order: matching lines (with context), or one FileCount per matching file."""
    rx = opts.regex()
    literal = opts.literal()
    prefilter = opts.prefilter()
    needle = None if opts.invert else rx if prefilter is None else prefilter
    whole = not opts.invert and lines_safe(*opts.source())
    for path, data in _contents(fs, opts, errors, after, needle):
        if literal is not None and data.find(literal) < 0:
            continue
        first = None if opts.invert else rx.search(data)
        if (not opts.invert and first is None) or b"\0" in data:
            continue  # no match anywhere, or binary
        if opts.files_with_matches and first is not None and b"\n" not in first.group():
            yield path, FileCount(text_of(path))  # a match within one line is the answer (grep -l stops early)
            continue
        last_nl = data.endswith(b"\n")
        lines = data.split(b"\n")
        if last_nl or not data:
            lines.pop()
        hits = _matching_lines(lines, rx, opts, data if whole else None)
        if not hits:
            continue
        name = text_of(path)
        if opts.files_with_matches:
            yield path, FileCount(name)
        elif opts.count:
            yield path, FileCount(name, len(hits))
        else:
            for item in _with_context(name, lines, hits, opts, last_nl):
                yield path, item
