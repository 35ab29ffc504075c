"""The text an operator's answer prints, shaped like the classic tool's output (grep, find, head, wc, du)."""

from __future__ import annotations

import argparse
import math

from frontdesk.storage.model import DirSummary, FileCount, FoundPath, LineItem, LineKind, Op, Result, Usage, WcCount

__all__ = ["human", "render"]


def human(n: int) -> str:
    """du -h: 1024-based, rounded up, one decimal below 10."""
    value, unit = float(n), ""
    for unit in ("", "K", "M", "G", "T", "P"):
        if value < 1024 or unit == "P":
            break
        value /= 1024
    if not unit:
        return str(n)
    if value < 10:
        return f"{math.ceil(value * 10) / 10:.1f}{unit}"
    return f"{math.ceil(value)}{unit}"


def _grep(args: argparse.Namespace, result: Result) -> list[str]:
    out: list[str] = []
    context = any(v is not None for v in (args.after, args.before, args.context))  # grep prints "--" even for -C0
    prev: LineItem | None = None
    for item in result.items:
        if isinstance(item, FileCount):
            out.append(item.path if item.count is None else f"{item.path}:{item.count}")
            continue
        if not isinstance(item, LineItem):
            continue
        if context and prev is not None and (prev.path != item.path or prev.line + 1 != item.line):
            out.append("--")
        sep = ":" if item.kind is LineKind.MATCH else "-"
        num = f"{item.line}{sep}" if args.line_number else ""
        out.append(f"{item.path}{sep}{num}{item.text}")
        prev = item
    return out


def _lines(args: argparse.Namespace, result: Result) -> list[str]:
    many = len(args.paths) > 1 or len({i.path for i in result.items if isinstance(i, LineItem)}) > 1
    out: list[str] = []
    current: str | None = None
    for item in result.items:
        if not isinstance(item, LineItem):
            continue
        if many and item.path != current:
            out.extend(([""] if current is not None else []) + [f"==> {item.path} <=="])
            current = item.path
        out.append(item.text)
    return out


def _wc(args: argparse.Namespace, result: Result) -> list[str]:
    cols = [f for f, flag in (("lines", args.l), ("words", args.w), ("bytes", args.c)) if flag]
    cols = cols or ["lines", "words", "bytes"]
    rows = [i for i in result.items if isinstance(i, WcCount)]
    if (len(rows) > 1 or len(args.paths) > 1) and isinstance(result.total, WcCount):  # wc: more than one argument
        rows.append(result.total)
    width = max((len(str(getattr(r, c))) for r in rows for c in cols), default=1)
    return [" ".join(str(getattr(r, c)).rjust(width) for c in cols) + f" {r.path}" for r in rows]


def _du(args: argparse.Namespace, result: Result) -> list[str]:
    rows = [i for i in result.items if isinstance(i, Usage)]
    if result.total is not None and isinstance(result.total, Usage):
        rows.append(result.total)

    def size(n: int) -> str:
        return human(n) if args.human else str(n) if args.apparent else str(math.ceil(n / 1024))

    return [f"{size(r.bytes)}\t{r.path}" for r in rows]


def _tree(result: Result) -> list[str]:
    return [
        f"{'  ' * i.depth}{i.path}  files={i.files} dirs={i.dirs} size={human(i.bytes)}"
        for i in result.items
        if isinstance(i, DirSummary)
    ]


def _find(args: argparse.Namespace, result: Result) -> list[str]:
    rows = [i for i in result.items if isinstance(i, FoundPath)]
    if args.long:
        return [f"{i.type} {i.size} {int(i.mtime or 0)} {i.path}" for i in rows]
    return [i.path for i in rows]


def render(op: Op, args: argparse.Namespace, result: Result) -> str:
    """The answer as text (with a final newline when not empty); paths and lines keep surrogate escapes."""
    if op is Op.GREP:
        out = _grep(args, result)
    elif op in (Op.HEAD, Op.TAIL):
        out = _lines(args, result)
    elif op is Op.WC:
        out = _wc(args, result)
    elif op is Op.DU:
        out = _du(args, result)
    elif op is Op.TREE:
        out = _tree(result)
    else:
        out = _find(args, result)
    return "".join(line + "\n" for line in out)
