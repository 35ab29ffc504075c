"""Read-only questions a backend's record sweep asks of the database, on a connection of its own (a worker thread).

An attempt key is `fd-<job id>.<attempt>` (core/attempt). It is settled, so no recovery reads its files again,
once its job's row shows the id stored (that attempt, not submitting), a later attempt, or no such job at all."""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

from frontdesk.jobs.state import TERMINAL_STATES

__all__ = ["connect", "ended_ids", "settled_keys"]

_TERMINAL = frozenset(s.value for s in TERMINAL_STATES)
_CHUNK = 500
T = TypeVar("T")


def connect(db: Path) -> sqlite3.Connection:
    """A read-only connection to the gateway's database."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    conn.execute("PRAGMA busy_timeout=30000")
    return conn


def _chunks(items: Sequence[T]) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


def settled_keys(conn: sqlite3.Connection, keys: Collection[str]) -> set[str]:
    """The keys among `keys` whose attempt no recovery will look for again."""
    wanted: dict[int, list[tuple[int, str]]] = {}
    for key in keys:
        name, dot, nth = key.removeprefix("fd-").partition(".")
        if key.startswith("fd-") and dot and name.isdigit() and nth.isdigit() and int(name) < 2**63:
            wanted.setdefault(int(name), []).append((int(nth), key))
    rows: dict[int, tuple[int, int]] = {}
    for part in _chunks(sorted(wanted)):
        sql = f"SELECT id, attempt, submitting FROM jobs WHERE id IN ({','.join('?' * len(part))})"
        rows.update({int(i): (int(a), int(s)) for i, a, s in conn.execute(sql, tuple(part))})
    done = set()
    for job, attempts in wanted.items():
        current, submitting = rows.get(job, (0, 0))
        for attempt, key in attempts:
            if job not in rows or attempt < current or (attempt == current and not submitting):
                done.add(key)
    return done


def ended_ids(conn: sqlite3.Connection, backend: str, ids: Collection[str]) -> dict[str, bool]:
    """Backend id -> whether the job whose current attempt holds it ended (ids no job holds are left out)."""
    out: dict[str, bool] = {}
    for part in _chunks(sorted(ids)):
        sql = f"SELECT backend_id, state FROM jobs WHERE backend=? AND backend_id IN ({','.join('?' * len(part))})"
        for bid, state in conn.execute(sql, (backend, *part)):
            out[str(bid)] = out.get(str(bid), True) and state in _TERMINAL
    return out
