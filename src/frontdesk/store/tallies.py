"""Counters derived from the journal that outlive it: what retention deletes is folded into `tallies` first.

A tally counts events of a few kinds: session wake-ups per channel and outcome (and the latency of the
successful ones), guard verdicts per rule and verdict, failure-memory warnings and lessons. Its value is the
folded part (the `tallies` table, core migration 7) plus the same count over the events still in the journal.
A pruning batch folds the events it deletes in the transaction that deletes them, so a reader on one snapshot
(`totals`, as `/metrics` reads it) never counts an event twice nor loses one: the counters only grow.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable

from frontdesk.events.models import EventKind

__all__ = ["TALLIED_KINDS", "Key", "count", "fold", "totals"]

Key = tuple[str, tuple[str, ...]]
"""A counter's name and its label values, e.g. ("deliveries", ("tmux", "true"))."""

TALLIED_KINDS: frozenset[str] = frozenset(
    k.value for k in (EventKind.SESSION_WAKE, EventKind.GUARD_VERDICT, EventKind.JOB_WARNING, EventKind.LESSON_RECORDED)
)


def _data(raw: str | None) -> dict[str, object]:
    try:
        data = json.loads(raw or "")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _wake(conn: sqlite3.Connection, ts: float, data: dict[str, object], out: dict[Key, float]) -> None:
    ok = data.get("ok") is True
    _add(out, ("deliveries", (str(data.get("channel") or "none"), "true" if ok else "false")), 1)
    listed = data.get("jobs")
    jobs = [j for j in listed if isinstance(j, int)][:1000] if isinstance(listed, list) else []
    if ok and jobs:
        marks = ",".join("?" * len(jobs))
        ended = conn.execute(f"SELECT MAX(ended_at) FROM jobs WHERE id IN ({marks})", jobs).fetchone()[0]
        if ended is not None:
            _add(out, ("wake_latency_count", ()), 1)
            _add(out, ("wake_latency_sum", ()), max(0.0, float(ts) - float(ended)))


def _add(out: dict[Key, float], key: Key, amount: float) -> None:
    out[key] = out.get(key, 0.0) + amount


def count(conn: sqlite3.Connection, rows: Iterable[tuple[str, float, str | None]]) -> dict[Key, float]:
    """The tallies of events given as (kind, ts, data JSON); kinds not tallied count nothing."""
    out: dict[Key, float] = {}
    for kind, ts, raw in rows:
        if kind == EventKind.SESSION_WAKE.value:
            _wake(conn, ts, _data(raw), out)
        elif kind == EventKind.GUARD_VERDICT.value:
            data = _data(raw)
            _add(
                out, ("guard_verdicts", (str(data.get("rule") or "unknown"), str(data.get("verdict") or "unknown"))), 1
            )
        elif kind == EventKind.JOB_WARNING.value and _data(raw).get("source") == "memory":
            _add(out, ("memory_hits", ()), 1)
        elif kind == EventKind.LESSON_RECORDED.value:
            _add(out, ("memory_lessons", ()), 1)
    return out


def fold(conn: sqlite3.Connection, counts: dict[Key, float]) -> None:
    """Add `counts` to the folded part (inside the caller's transaction: the one deleting those events)."""
    conn.executemany(
        "INSERT INTO tallies (name, labels, value) VALUES (?, ?, ?) "
        "ON CONFLICT (name, labels) DO UPDATE SET value = value + excluded.value",
        [(name, json.dumps(list(labels)), value) for (name, labels), value in counts.items()],
    )


def totals(conn: sqlite3.Connection) -> dict[Key, float]:
    """Every tally: folded plus live. Call it inside one read transaction for a consistent answer."""
    marks = ",".join("?" * len(TALLIED_KINDS))
    rows = conn.execute(f"SELECT kind, ts, data FROM events WHERE kind IN ({marks})", sorted(TALLIED_KINDS))
    out = count(conn, rows)
    for name, labels, value in conn.execute("SELECT name, labels, value FROM tallies"):
        _add(out, (str(name), tuple(str(v) for v in json.loads(labels))), float(value))
    return out
