"""Queries over job arrays: a parent row and its task rows (`array_id`, `array_index`), stored together."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from frontdesk import faults
from frontdesk.events.models import Event
from frontdesk.jobs.record import JobRecord, Scalar
from frontdesk.jobs.state import TERMINAL_STATES
from frontdesk.store.jobs import JobStore

__all__ = [
    "StoredArray",
    "counts",
    "in_flight",
    "insert_rows",
    "many",
    "store_array",
    "task",
    "task_id_range",
    "tasks",
    "unfinished",
    "unfinished_tasks",
]

_TERMINAL = tuple(s.value for s in TERMINAL_STATES)


def insert_rows(store: JobStore, columns: Sequence[Mapping[str, Scalar]], array_id: int | None = None) -> list[int]:
    """Insert many job rows (an array's tasks, a batch) inside the caller's transaction; their ids in order."""
    ids = []
    for cols in columns:
        row = {**cols, "array_id": array_id}
        names = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        cur = store.conn.execute(f"INSERT INTO jobs ({names}) VALUES ({marks})", tuple(row.values()))
        ids.append(int(cur.lastrowid or 0))
    return ids


@dataclass(frozen=True)
class StoredArray:
    """An array as committed: its parent, its tasks by index, its events with their sequence numbers."""

    parent: JobRecord
    tasks: list[JobRecord]
    events: list[Event]


def store_array(
    path: Path,
    parent: Mapping[str, Scalar],
    rows: Sequence[Mapping[str, Scalar]],
    events_of: Callable[[int], Sequence[Event]],
) -> StoredArray:
    """Store an array (the parent, every task, the parent's events) in ONE transaction on a connection of its own.

    Made for a worker thread: 10,000 task rows take SQLite ~1-2 s, which the gateway's event loop (its own
    connection) would otherwise wait out. SQLite runs without the GIL, WAL readers on the loop's connection see
    nothing of the array until COMMIT, then all of it; a kill -9 before COMMIT leaves nothing (`array_uncommitted`).
    A writer on the loop's connection meanwhile waits for the COMMIT (busy timeout), as it waited before.
    sqlite3.IntegrityError on a repeated idempotency key or request id, nothing stored."""
    conn = sqlite3.connect(path, isolation_level=None, timeout=30)
    try:
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA synchronous=NORMAL")  # as store/db.open_db: a commit survives kill -9
        conn.execute("PRAGMA foreign_keys=ON")
        store = JobStore(conn)
        with store.transaction():
            parent_id = store.insert_job(**parent)
            insert_rows(store, rows, parent_id)
            events = [store.append_event(e) for e in events_of(parent_id)]
            faults.point("array_uncommitted")
        head = store.get(parent_id)
        assert head is not None
        return StoredArray(head, tasks(store, parent_id), events)
    finally:
        conn.close()


def many(store: JobStore, ids: Sequence[int]) -> list[JobRecord]:
    """Jobs by id, in the order asked (ids that do not exist are left out)."""
    found: dict[int, JobRecord] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ",".join("?" for _ in chunk)
        for row in store.conn.execute(f"SELECT * FROM jobs WHERE id IN ({marks})", tuple(chunk)):
            rec = JobRecord.from_row(row)
            found[rec.id] = rec
    return [found[i] for i in ids if i in found]


def tasks(store: JobStore, array_id: int) -> list[JobRecord]:
    """Every task of an array, by index."""
    cur = store.conn.execute("SELECT * FROM jobs WHERE array_id=? ORDER BY array_index", (array_id,))
    return [JobRecord.from_row(r) for r in cur]


def task_id_range(store: JobStore, array_id: int) -> list[int]:
    """[first, last] task id of an array (its ids are consecutive: one insert), [] if it has none."""
    row = store.conn.execute("SELECT min(id), max(id) FROM jobs WHERE array_id=?", (array_id,)).fetchone()
    return [] if row[0] is None else [int(row[0]), int(row[1])]


def unfinished_tasks(store: JobStore, array_id: int) -> list[JobRecord]:
    """The tasks of an array that have not ended, by index."""
    marks = ",".join("?" for _ in _TERMINAL)
    cur = store.conn.execute(
        f"SELECT * FROM jobs WHERE array_id=? AND state NOT IN ({marks}) ORDER BY array_index", (array_id, *_TERMINAL)
    )
    return [JobRecord.from_row(r) for r in cur]


def unfinished(store: JobStore, array_id: int) -> bool:
    """Whether some task of an array has not ended (asked at every task's end). Looked for from the highest index
    down, where tasks dispatched and cancelled in order are still unfinished: a count read every task's row at every
    task's end, so cancelling a 10,000-task array held the gateway for minutes."""
    marks = ",".join("?" for _ in _TERMINAL)
    row = store.conn.execute(
        f"SELECT 1 FROM jobs WHERE array_id=? AND state NOT IN ({marks}) ORDER BY array_index DESC LIMIT 1",
        (array_id, *_TERMINAL),
    ).fetchone()
    return row is not None


def task(store: JobStore, array_id: int, index: int) -> JobRecord | None:
    """One task of an array by its index."""
    row = store.conn.execute("SELECT * FROM jobs WHERE array_id=? AND array_index=?", (array_id, index)).fetchone()
    return None if row is None else JobRecord.from_row(row)


def in_flight(store: JobStore, array_ids: Sequence[int]) -> dict[int, int]:
    """Per array: tasks handed to the backend (or being handed) that have not ended (what `%N` limits)."""
    if not array_ids:
        return {}
    marks = ",".join("?" for _ in array_ids)
    ends = ",".join("?" for _ in _TERMINAL)
    cur = store.conn.execute(
        f"SELECT array_id, COUNT(*) FROM jobs WHERE array_id IN ({marks}) AND state NOT IN ({ends}) "
        "AND (backend_id IS NOT NULL OR submitting=1) GROUP BY array_id",
        (*array_ids, *_TERMINAL),
    )
    found = {int(a): int(n) for a, n in cur}
    return {a: found.get(a, 0) for a in array_ids}


def counts(store: JobStore, array_ids: Sequence[int]) -> dict[int, dict[str, int]]:
    """Per array: how many tasks are in each state."""
    out: dict[int, dict[str, int]] = {a: {} for a in array_ids}
    if not array_ids:
        return out
    marks = ",".join("?" for _ in array_ids)
    cur = store.conn.execute(
        f"SELECT array_id, state, COUNT(*) FROM jobs WHERE array_id IN ({marks}) GROUP BY array_id, state "
        "ORDER BY array_id, state",
        tuple(array_ids),
    )
    for array_id, state, n in cur:
        out[int(array_id)][str(state)] = int(n)
    return out
