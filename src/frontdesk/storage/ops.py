"""One entry point for every operator: `run(request, fs)` parses the flags, runs, pages and renders.

The CLI (locally), the per-caller worker behind the gateway and the tests all call this, so an answer is the
same wherever it was computed. Flags are the ones coreutils/ripgrep users know (see docs/storage.md).
"""

from __future__ import annotations

import argparse
import itertools
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from frontdesk.errors import UserError
from frontdesk.storage import render
from frontdesk.storage.files import LineRange, lines, wc
from frontdesk.storage.fs import Fs, Kind, WalkError
from frontdesk.storage.grep import Globs, GrepOptions, grep
from frontdesk.storage.model import Cursor, Item, Op, Result, WcCount
from frontdesk.storage.tree import Compare, DuOptions, FindOptions, du, find, tree

__all__ = ["FsRequest", "parser_for", "paths_of", "run", "DEFAULT_LIMIT", "MAX_LIMIT"]

DEFAULT_LIMIT = 1000
MAX_LIMIT = 100_000


@dataclass(frozen=True)
class FsRequest:
    """A question: the operator, its arguments as typed on a command line, where they are relative to."""

    op: Op
    argv: tuple[str, ...]
    cwd: str
    limit: int = DEFAULT_LIMIT
    cursor: str | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.limit <= MAX_LIMIT:
            raise UserError(f"--limit must be 1..{MAX_LIMIT}, got {self.limit}")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UserError(f"fs {self.prog.split()[-1]}: {message}")


def _enc(paths: Sequence[str]) -> tuple[bytes, ...]:
    out = []
    for p in paths or ["."]:
        raw = p.encode("utf-8", "surrogateescape")
        out.append(raw.rstrip(b"/") or b"/")
    return tuple(out)


def _globs(p: argparse.ArgumentParser) -> None:
    p.add_argument("-g", "--glob", action="append", default=[], help="rg glob: keep matching files; !GLOB prunes")
    p.add_argument("--include", action="append", default=[], help="grep: only files whose name matches")
    p.add_argument("--exclude", action="append", default=[], help="grep: skip files whose name matches")
    p.add_argument("--exclude-dir", action="append", default=[], help="grep: never enter matching directories")


def _grep_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("pattern")
    p.add_argument("paths", nargs="*")
    for flag, dest, text in (
        ("-F", "fixed", "fixed string"),
        ("-i", "ignore_case", "ignore case"),
        ("-v", "invert", "non-matching lines"),
        ("-w", "word", "whole words"),
        ("-l", "files_with_matches", "only names of files with matches"),
        ("-c", "count", "matching lines per file"),
        ("-n", "line_number", "line numbers"),
        ("-r", "recursive", "recursive (always on)"),
    ):
        p.add_argument(flag, dest=dest, action="store_true", help=text)
    p.add_argument("-A", type=int, default=None, dest="after")
    p.add_argument("-B", type=int, default=None, dest="before")
    p.add_argument("-C", type=int, default=None, dest="context")
    p.add_argument("-m", "--max-count", type=int, default=None)
    _globs(p)


def _find_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*")
    p.add_argument("-name", action="append", default=[])
    p.add_argument("-iname", action="append", default=[])
    p.add_argument("-type", default="", help="f, d, l (comma-separated for several)")
    p.add_argument("-maxdepth", type=int, default=None)
    p.add_argument("-mindepth", type=int, default=0)
    p.add_argument("-size", action="append", default=[])
    p.add_argument("-mtime", action="append", default=[])
    p.add_argument("--long", action="store_true", help="sizes and mtimes in the answer")


def _lines_parser(p: argparse.ArgumentParser, tail: bool) -> None:
    p.add_argument("paths", nargs="+")
    p.add_argument("-n", "--lines-count", dest="n", default="10", help="N, -N (head) or +N (tail)")
    p.add_argument("--lines", dest="range", default=None, help="A:B, 1-based inclusive")
    _globs(p)


def _wc_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+")
    for flag in ("-l", "-w", "-c"):
        p.add_argument(flag, action="store_true")
    _globs(p)


def _tree_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*")
    p.add_argument("-L", "--depth", type=int, default=2, dest="depth")


def _du_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*")
    p.add_argument("-s", action="store_true", dest="summarize")
    p.add_argument("-h", action="store_true", dest="human")
    p.add_argument("-a", action="store_true", dest="all_files")
    p.add_argument("-b", "--apparent-size", action="store_true", dest="apparent")
    p.add_argument("-d", "--max-depth", type=int, default=None, dest="maxdepth")


_ADDERS: dict[Op, Callable[[argparse.ArgumentParser], None]] = {
    Op.GREP: _grep_parser,
    Op.FIND: _find_parser,
    Op.HEAD: lambda p: _lines_parser(p, tail=False),
    Op.TAIL: lambda p: _lines_parser(p, tail=True),
    Op.WC: _wc_parser,
    Op.TREE: _tree_parser,
    Op.DU: _du_parser,
}


def add_arguments(op: Op, p: argparse.ArgumentParser) -> None:
    """The operator's flags on a parser (the CLI adds its own --json/--limit/--cursor/--local)."""
    _ADDERS[op](p)


def parser_for(op: Op) -> argparse.ArgumentParser:
    p = _Parser(prog=f"frontdesk fs {op.value}", add_help=False)
    add_arguments(op, p)
    return p


def _range(op: Op, args: argparse.Namespace) -> LineRange:
    if args.range is not None:
        return LineRange.parse_range(args.range)
    n = str(args.n)
    body = n.lstrip("+-")
    if not body.isdigit():
        raise UserError(f"fs {op.value} -n: expected a number, got {n!r}")
    if op is Op.HEAD:
        return LineRange(drop_end=int(body)) if n.startswith("-") else LineRange(last=int(body))
    return LineRange(first=max(1, int(body))) if n.startswith("+") else LineRange(from_end=int(body))


_TYPES = {"f": Kind.FILE, "d": Kind.DIR, "l": Kind.LINK}

_Stream = Callable[[bytes | None], Iterator[tuple[bytes, Item]]]


_COUNTS = ("after", "before", "context", "max_count", "maxdepth", "mindepth", "depth")


def _stream(op: Op, args: argparse.Namespace, fs: Fs, errors: list[WalkError]) -> _Stream:
    for name in _COUNTS:
        value = getattr(args, name, None)
        if value is not None and value < 0:
            raise UserError(f"fs {op.value}: {name.replace('_', '-')} must be 0 or more, got {value}")
    globs = Globs.parse(args.glob, args.include, args.exclude, args.exclude_dir) if hasattr(args, "glob") else Globs()
    if op is Op.GREP:
        ctx = args.context
        opts = GrepOptions(
            args.pattern.encode("utf-8", "surrogateescape"), _enc(args.paths), args.fixed, args.ignore_case,
            args.invert, args.word, args.files_with_matches, args.count,
            (args.before or 0) if ctx is None else ctx, (args.after or 0) if ctx is None else ctx,
            args.max_count, globs,
        )  # fmt: skip
        return lambda after: grep(fs, opts, errors, after)
    if op is Op.FIND:
        bad = [t for t in args.type.split(",") if t and t not in _TYPES]
        if bad:
            raise UserError(f"fs find -type: unknown type {bad[0]!r} (f, d or l)")
        fopts = FindOptions(
            _enc(args.paths), tuple(n.encode("utf-8", "surrogateescape") for n in args.name),
            tuple(n.encode("utf-8", "surrogateescape") for n in args.iname),
            frozenset(_TYPES[t] for t in args.type.split(",") if t), args.maxdepth, args.mindepth,
            tuple(Compare.parse(s, "-size", True) for s in args.size),
            tuple(Compare.parse(s, "-mtime", False) for s in args.mtime), args.long, time.time(),
        )  # fmt: skip
        return lambda after: find(fs, fopts, errors, after)
    if op in (Op.HEAD, Op.TAIL):
        rng = _range(op, args)
        return lambda after: lines(fs, _enc(args.paths), rng, globs, errors, after)
    if op is Op.WC:
        return lambda after: wc(fs, _enc(args.paths), globs, errors, after)
    if op is Op.TREE:
        return lambda after: ((b"", i) for i in tree(fs, _enc(args.paths), args.depth, errors))
    dopts = DuOptions(_enc(args.paths), args.summarize, args.apparent, args.all_files, args.maxdepth)
    return lambda after: ((b"", i) for i in du(fs, dopts, errors))


def _page(stream: _Stream, limit: int, cursor: Cursor | None, key: str) -> tuple[list[Item], str | None]:
    """Up to `limit` items from the cursor on, and the cursor of the next page (None at the end)."""
    skip = cursor.skip if cursor is not None else 0
    after = cursor.path if cursor is not None and cursor.path else None
    items: list[Item] = []
    it = stream(after)
    if after is None:
        it = itertools.islice(it, skip, None)
        skip = 0
    prev, same = b"\0", 0
    for path, item in it:
        same = same + 1 if path == prev else 0
        prev = path
        if after is not None and path == after and same < skip:
            continue
        if len(items) == limit:
            nxt = Cursor(key, path, same) if path else Cursor(key, b"", (cursor.skip if cursor else 0) + limit)
            return items, nxt.encode()
        items.append(item)
    return items, None


_VALUED = {
    Op.FIND: frozenset({"-size", "-mtime", "-maxdepth", "-mindepth"}),
    Op.HEAD: frozenset({"-n", "--lines-count"}),
    Op.TAIL: frozenset({"-n", "--lines-count"}),
}


def _joined(op: Op, argv: Sequence[str]) -> list[str]:
    """`-size -1k` as `-size=-1k`: argparse would take a value starting with '-' for an option."""
    out: list[str] = []
    valued = _VALUED.get(op, frozenset())
    it = iter(argv)
    for arg in it:
        if arg in valued:
            value = next(it, None)
            out.append(arg if value is None else f"{arg}={value}")
        else:
            out.append(arg)
    return out


def paths_of(op: Op, argv: Sequence[str]) -> list[str]:
    """The path operands of a question as typed (`.` when none); UserError for bad flags."""
    args = parser_for(op).parse_args(_joined(op, argv))
    return list(args.paths) or ["."]


def run(req: FsRequest, fs: Fs) -> Result:
    """Answer one question with the caller's view of the filesystem (`fs` is the caller's own)."""
    args = parser_for(req.op).parse_args(_joined(req.op, req.argv))
    key = Cursor.request_key(req.op, req.argv, req.cwd)
    cursor = Cursor.decode(req.cursor, key) if req.cursor else None
    errors: list[WalkError] = []
    fs.begin()
    before = fs.counters.as_dict()
    items, nxt = _page(_stream(req.op, args, fs, errors), req.limit, cursor, key)
    result = Result(req.op, items, cursor=nxt)
    if req.op is Op.WC:
        counts = [i for i in items if isinstance(i, WcCount)]
        result.total = WcCount("total", *(sum(getattr(c, f) for c in counts) for f in ("lines", "words", "bytes")))
    result.errors = [(e.path.decode("utf-8", "surrogateescape"), e.message) for e in errors]
    result.stats = {k: v - before[k] for k, v in fs.counters.as_dict().items()}
    result.text = render.render(req.op, args, result)
    return result
