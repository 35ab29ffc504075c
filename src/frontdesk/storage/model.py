"""Typed answers of the storage operators, their JSON form and the continuation cursor.

Paths and lines are bytes on disk; in JSON they are text decoded as UTF-8 with `surrogateescape`, so a name
that is not UTF-8 travels as lone surrogates (`\\udcXX`) and comes back to the same bytes with
`os.fsencode` / `encode("utf-8", "surrogateescape")`.
"""

from __future__ import annotations

import base64
import binascii
import enum
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

from frontdesk.errors import UserError

__all__ = [
    "Cursor",
    "DirSummary",
    "FileCount",
    "FoundPath",
    "Item",
    "LineItem",
    "LineKind",
    "Op",
    "Result",
    "Usage",
    "WcCount",
    "text_of",
]


class Op(enum.Enum):
    """The operators (`frontdesk fs OP` and POST /v1/fs/OP)."""

    GREP = "grep"
    FIND = "find"
    HEAD = "head"
    TAIL = "tail"
    WC = "wc"
    TREE = "tree"
    DU = "du"


class LineKind(enum.Enum):
    MATCH = "match"
    CONTEXT = "context"
    LINE = "line"
    """A line shown by head/tail."""


def text_of(raw: bytes) -> str:
    """Bytes as JSON-safe text that round-trips (`surrogateescape`)."""
    return raw.decode("utf-8", "surrogateescape")


@dataclass(frozen=True)
class LineItem:
    """A line of a file: a grep match or context line, or a head/tail line."""

    path: str
    line: int
    text: str
    kind: LineKind
    newline: bool = True


@dataclass(frozen=True)
class FileCount:
    """grep -l (count None) or grep -c."""

    path: str
    count: int | None = None


@dataclass(frozen=True)
class FoundPath:
    """A find result: the type letter of find's -type, and size/mtime when they were asked or needed."""

    path: str
    type: str
    depth: int
    size: int | None = None
    mtime: float | None = None


@dataclass(frozen=True)
class WcCount:
    path: str
    lines: int
    words: int
    bytes: int


@dataclass(frozen=True)
class DirSummary:
    """tree: what lies under a directory (all depths), shown down to the depth asked."""

    path: str
    depth: int
    files: int
    dirs: int
    bytes: int


@dataclass(frozen=True)
class Usage:
    """du: disk usage of a path (bytes; blocks*512 unless apparent sizes were asked)."""

    path: str
    bytes: int


Item: TypeAlias = LineItem | FileCount | FoundPath | WcCount | DirSummary | Usage


@dataclass(frozen=True)
class Cursor:
    """Where the next page starts: the path of its first item and how many of that path's items to skip."""

    request: str
    path: bytes
    skip: int

    def encode(self) -> str:
        body = json.dumps({"r": self.request, "p": self.path.hex(), "k": self.skip}).encode()
        return base64.urlsafe_b64encode(body).decode().rstrip("=")

    @classmethod
    def decode(cls, token: str, request: str) -> Cursor:
        """Parse a cursor given back by a caller; UserError when it is malformed or for another request."""
        try:
            body = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
            cur = cls(str(body["r"]), bytes.fromhex(str(body["p"])), int(body["k"]))
        except (ValueError, KeyError, TypeError, binascii.Error) as exc:
            raise UserError(f"bad --cursor: {exc}") from None
        if cur.request != request or cur.skip < 0:
            raise UserError("bad --cursor: it belongs to another question (same operator, paths and flags)")
        return cur

    @staticmethod
    def request_key(op: Op, argv: Sequence[str], cwd: str) -> str:
        """Identifies a question so that a cursor is used only with the question it came from."""
        raw = json.dumps([op.value, list(argv), cwd]).encode("utf-8", "surrogateescape")
        return hashlib.sha256(raw).hexdigest()[:16]


@dataclass
class Result:
    """One page of an operator's answer."""

    op: Op
    items: list[Item] = field(default_factory=list)
    total: WcCount | Usage | None = None
    cursor: str | None = None
    errors: list[tuple[str, str]] = field(default_factory=list)
    stats: dict[str, int] = field(default_factory=dict)
    text: str = ""
    """The answer rendered as the classic tool prints it (filled by render.render)."""

    def to_json(self) -> dict[str, object]:
        from dataclasses import asdict

        def one(item: Item) -> dict[str, object]:
            d = dict(vars(item))  # dataclasses.asdict deep-copies: 10x slower on large answers
            if isinstance(item, LineItem):
                d["kind"] = item.kind.value
            return d

        return {
            "op": self.op.value,
            "items": [one(i) for i in self.items],
            "total": asdict(self.total) if self.total is not None else None,
            "cursor": self.cursor,
            "truncated": self.cursor is not None,
            "errors": [{"path": p, "message": m} for p, m in self.errors],
            "stats": dict(self.stats),
            "text": self.text,
        }
