"""Queries over jobs, attempts and the event journal. Only the gateway writes; one connection."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Sequence
from typing import Any

from frontdesk.backends.base import TERMINAL_STATES
from frontdesk.events.models import Event, EventKind

__all__ = ["JobStore", "job_record"]

_TERMINAL = tuple(s.value for s in TERMINAL_STATES)
_RECORD_FIELDS = (
    "id",
    "name",
    "state",
    "reason",
    "backend",
    "backend_id",
    "attempt",
    "principal",
    "session",
    "job_class",
    "class_reason",
    "partition",
    "qos",
    "priority",
    "submitted_at",
    "started_at",
    "ended_at",
    "exit_code",
    "signal",
)


def job_record(row: sqlite3.Row) -> dict[str, Any]:
    """The public JSON form of a job row (the `frontdesk status --json` schema)."""
    rec = {k: row[k] for k in _RECORD_FIELDS}
    rec["spec"] = json.loads(row["spec"])
    return rec


class JobStore:
    """Jobs and the append-only event journal in one SQLite database (WAL)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    # -- jobs ---------------------------------------------------------------------------------------
    def insert_job(self, **fields: Any) -> int:
        """Insert a job row; returns its id. Raises sqlite3.IntegrityError on a repeated idempotency key."""
        cols = ", ".join(fields)
        marks = ", ".join("?" for _ in fields)
        cur = self.conn.execute(f"INSERT INTO jobs ({cols}) VALUES ({marks})", tuple(fields.values()))
        return int(cur.lastrowid or 0)

    def update_job(self, job_id: int, **fields: Any) -> None:
        """Set some columns of one job."""
        sets = ", ".join(f"{k}=?" for k in fields)
        self.conn.execute(f"UPDATE jobs SET {sets} WHERE id=?", (*fields.values(), job_id))

    def get(self, job_id: int) -> sqlite3.Row | None:
        """One job row by id."""
        row: sqlite3.Row | None = self.conn.execute("SELECT * FROM jobs WHERE id=?", (job_id,)).fetchone()
        return row

    def by_idempotency_key(self, key: str) -> sqlite3.Row | None:
        """The job submitted earlier with this key."""
        row: sqlite3.Row | None = self.conn.execute("SELECT * FROM jobs WHERE idempotency_key=?", (key,)).fetchone()
        return row

    def by_name(self, name: str, principal: str) -> sqlite3.Row | None:
        """The newest job of this principal with this name."""
        row: sqlite3.Row | None = self.conn.execute(
            "SELECT * FROM jobs WHERE name=? AND principal=? ORDER BY id DESC LIMIT 1", (name, principal)
        ).fetchone()
        return row

    def by_backend_ids(self, backend: str, ids: Iterable[str]) -> list[sqlite3.Row]:
        """Jobs whose current attempt has one of these backend ids."""
        ids = list(ids)
        if not ids:
            return []
        marks = ",".join("?" for _ in ids)
        return list(
            self.conn.execute(f"SELECT * FROM jobs WHERE backend=? AND backend_id IN ({marks})", (backend, *ids))
        )

    def active(self) -> list[sqlite3.Row]:
        """Every job that has not ended."""
        marks = ",".join("?" for _ in _TERMINAL)
        return list(self.conn.execute(f"SELECT * FROM jobs WHERE state NOT IN ({marks}) ORDER BY id", _TERMINAL))

    def select(
        self,
        *,
        state: Sequence[str] = (),
        session: str | None = None,
        principal: str | None = None,
        name: str | None = None,
        active: bool = False,
        limit: int = 200,
    ) -> list[sqlite3.Row]:
        """Jobs matching the filters, newest first."""
        where, args = [], []  # type: ignore[var-annotated]
        if state:
            where.append(f"state IN ({','.join('?' for _ in state)})")
            args.extend(state)
        if active:
            where.append(f"state NOT IN ({','.join('?' for _ in _TERMINAL)})")
            args.extend(_TERMINAL)
        for col, val in (("session", session), ("principal", principal), ("name", name)):
            if val is not None:
                where.append(f"{col}=?")
                args.append(val)
        sql = "SELECT * FROM jobs" + (" WHERE " + " AND ".join(where) if where else "")
        return list(self.conn.execute(sql + " ORDER BY id DESC LIMIT ?", (*args, limit)))

    def dependents_waiting(self) -> list[sqlite3.Row]:
        """PENDING jobs that have not been handed to the backend yet."""
        return list(
            self.conn.execute(
                "SELECT * FROM jobs WHERE state='PENDING' AND backend_id IS NULL AND submitting=0 ORDER BY id"
            )
        )

    def record_attempt(self, job_id: int, attempt: int, **fields: Any) -> None:
        """Insert or update one attempt's row."""
        cols = ["job_id", "attempt", *fields]
        marks = ",".join("?" for _ in cols)
        updates = ",".join(f"{k}=excluded.{k}" for k in fields) or "attempt=excluded.attempt"
        self.conn.execute(
            f"INSERT INTO attempts ({','.join(cols)}) VALUES ({marks}) "
            f"ON CONFLICT(job_id, attempt) DO UPDATE SET {updates}",
            (job_id, attempt, *fields.values()),
        )

    def attempts(self, job_id: int) -> list[sqlite3.Row]:
        """Every attempt of a job, oldest first."""
        return list(self.conn.execute("SELECT * FROM attempts WHERE job_id=? ORDER BY attempt", (job_id,)))

    # -- events -------------------------------------------------------------------------------------
    def append_event(self, event: Event) -> Event:
        """Store an event; returns it with its sequence number and timestamp."""
        ts = event.ts or time.time()
        cur = self.conn.execute(
            "INSERT INTO events (ts, kind, job_id, session, principal, data) VALUES (?,?,?,?,?,?)",
            (ts, str(event.kind), event.job_id, event.session, event.principal, event.data_json()),
        )
        return Event(
            kind=event.kind,
            data=event.data,
            job_id=event.job_id,
            session=event.session,
            principal=event.principal,
            seq=int(cur.lastrowid or 0),
            ts=ts,
        )

    def events_since(
        self, since: int = 0, *, job_id: int | None = None, kinds: Sequence[str] = (), limit: int = 10000
    ) -> list[Event]:
        """Stored events with seq > since, oldest first."""
        sql, args = "SELECT * FROM events WHERE seq>?", [since]
        if job_id is not None:
            sql += " AND job_id=?"
            args.append(job_id)
        if kinds:
            sql += f" AND kind IN ({','.join('?' for _ in kinds)})"
            args.extend(kinds)  # type: ignore[arg-type]
        rows = self.conn.execute(sql + " ORDER BY seq LIMIT ?", (*args, limit))
        return [
            Event(
                kind=EventKind(r["kind"]),
                data=json.loads(r["data"]),
                job_id=r["job_id"],
                session=r["session"],
                principal=r["principal"],
                seq=r["seq"],
                ts=r["ts"],
            )
            for r in rows
        ]

    def last_seq(self) -> int:
        """The newest event's sequence number (0 when none)."""
        row = self.conn.execute("SELECT MAX(seq) FROM events").fetchone()
        return int(row[0] or 0)
