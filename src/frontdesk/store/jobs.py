"""Queries over jobs, attempts and the event journal. Only the gateway writes; one connection."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from frontdesk.events.models import Event, EventKind
from frontdesk.jobs.record import EndStage, JobRecord, scoped_key
from frontdesk.jobs.state import TERMINAL_STATES, UNFINISHED_STATES, JobState

__all__ = ["JobStore", "job_record"]

_TERMINAL = tuple(s.value for s in TERMINAL_STATES)
_UNFINISHED = tuple(s.value for s in UNFINISHED_STATES)
_WAITING = f"state='{JobState.PENDING.value}' AND backend_id IS NULL AND submitting=0 AND array_size IS NULL"
"""A job not handed to a backend yet, held by its dependencies, a retry backoff or its array's `%N`."""


def job_record(record: JobRecord) -> dict[str, Any]:
    """The public JSON form of a job (the `frontdesk status --json` schema)."""
    return record.public()


def _records(cur: sqlite3.Cursor) -> list[JobRecord]:
    return [JobRecord.from_row(r) for r in cur]


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

    def insert_job_record(self, **fields: Any) -> JobRecord:
        """Insert a job row; returns it as stored (`RETURNING *`: no second read). IntegrityError as insert_job.

        RETURNING gives the values as bound: an int given to a REAL column (`submitted_at`, `eligible_at`)
        comes back an int where a later read gives a float, so pass floats there (time.time() does).
        """
        cols = ", ".join(fields)
        marks = ", ".join("?" for _ in fields)
        rows = self.conn.execute(f"INSERT INTO jobs ({cols}) VALUES ({marks}) RETURNING *", tuple(fields.values()))
        return JobRecord.from_row(rows.fetchall()[0])  # fetched to the end: the statement is done before COMMIT

    def writes(self) -> int:
        """Rows this connection has written so far (SQLite's total_changes): the same count, nothing changed."""
        return self.conn.total_changes

    def update_job(self, job_id: int, **fields: Any) -> None:
        """Set some columns of one job."""
        sets = ", ".join(f"{k}=?" for k in fields)
        self.conn.execute(f"UPDATE jobs SET {sets} WHERE id=?", (*fields.values(), job_id))

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Everything inside commits together or not at all (the connection is in autocommit otherwise).

        Inside another transaction it is a savepoint of that one, and commits with it (a job's end: the
        plug-ins' writes and `end_job` in one commit, core/ending.py)."""
        if self.conn.in_transaction:
            self.conn.execute("SAVEPOINT inner")
            try:
                yield
            except BaseException:
                self.conn.execute("ROLLBACK TO inner")
                self.conn.execute("RELEASE inner")
                raise
            self.conn.execute("RELEASE inner")
            return
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def _one(self, sql: str, args: Sequence[Any]) -> JobRecord | None:
        row: sqlite3.Row | None = self.conn.execute(sql, tuple(args)).fetchone()
        return None if row is None else JobRecord.from_row(row)

    def get(self, job_id: int) -> JobRecord | None:
        """One job by id."""
        return self._one("SELECT * FROM jobs WHERE id=?", (job_id,))

    def state_of(self, job_id: int) -> JobState | None:
        """One job's state (None: no such job), without building its record."""
        row = self.conn.execute("SELECT state FROM jobs WHERE id=?", (job_id,)).fetchone()
        return None if row is None else JobState(row[0])

    def owner_of(self, job_id: int) -> tuple[bool, str | None]:
        """(found, principal) of one job, without building its record."""
        row = self.conn.execute("SELECT principal FROM jobs WHERE id=?", (job_id,)).fetchone()
        return (False, None) if row is None else (True, None if row[0] is None else str(row[0]))

    def by_idempotency_key(self, principal: str, key: str) -> JobRecord | None:
        """The job this principal submitted earlier with this key (another principal's same key is another key)."""
        return self._one("SELECT * FROM jobs WHERE idempotency_key=?", (scoped_key(principal, key),))

    def by_request(self, principal: str, request_id: str) -> JobRecord | None:
        """The job this principal's request made, if it was stored (the request is being sent again)."""
        return self._one("SELECT * FROM jobs WHERE principal=? AND request_id=?", (principal, request_id))

    def sent_before(self, principal: str, key: str | None, request_id: str | None) -> JobRecord | None:
        """The job an earlier sending of this submission stored (its idempotency key, else its request id)."""
        row = self.by_idempotency_key(principal, key) if key else None
        if row is None and request_id:
            row = self.by_request(principal, request_id)
        return row

    def by_name(self, name: str, principal: str) -> JobRecord | None:
        """The newest job of this principal with this name."""
        return self._one("SELECT * FROM jobs WHERE name=? AND principal=? ORDER BY id DESC LIMIT 1", (name, principal))

    def by_backend_ids(self, backend: str, ids: Iterable[str]) -> list[JobRecord]:
        """Jobs whose current attempt has one of these backend ids."""
        ids = list(ids)
        if not ids:
            return []
        marks = ",".join("?" for _ in ids)
        return _records(
            self.conn.execute(f"SELECT * FROM jobs WHERE backend=? AND backend_id IN ({marks})", (backend, *ids))
        )

    def active(self) -> list[JobRecord]:
        """Every job that has not ended (`state IN` the unfinished states: an index search, not a table scan)."""
        marks = ",".join("?" for _ in _UNFINISHED)
        return _records(self.conn.execute(f"SELECT * FROM jobs WHERE state IN ({marks}) ORDER BY id", _UNFINISHED))

    def handed_over(self) -> list[tuple[int, str, str, str | None]]:
        """(id, backend id, state, reason) of each unfinished job whose attempt a backend holds (the tick's safety
        net: four columns, no record built, so a queue of 1,000 costs little)."""
        marks = ",".join("?" for _ in _UNFINISHED)
        sql = f"SELECT id, backend_id, state, reason FROM jobs WHERE state IN ({marks}) AND backend_id IS NOT NULL"
        return [(int(i), str(b), str(s), r) for i, b, s, r in self.conn.execute(sql + " ORDER BY id", _UNFINISHED)]

    def reports_pending(self) -> list[JobRecord]:
        """Ended jobs whose end did not get through (a crash between the terminal state and the fan-out)."""
        return _records(self.conn.execute("SELECT * FROM jobs WHERE report_pending>0 ORDER BY id"))

    def store_report(self, job_id: int, report_json: str, events: Sequence[Event]) -> list[Event]:
        """The report and the job's terminal events in one transaction (the end moves to EVENTS_STORED)."""
        with self.transaction():
            self.conn.execute(
                "UPDATE jobs SET report=?, report_pending=? WHERE id=?",
                (report_json, int(EndStage.EVENTS_STORED), job_id),
            )
            return [self.append_event(e) for e in events]

    def end_job(
        self,
        job_id: int,
        changes: dict[str, Any],
        attempt: tuple[int, dict[str, Any]] | None,
        report_json: str,
        events: Sequence[Event],
    ) -> list[Event]:
        """A job's end in one transaction: its terminal columns, its attempt's row, its report and its events
        (the end moves straight to EVENTS_STORED). Returns the stored events."""
        with self.transaction():
            stage = int(EndStage.EVENTS_STORED)
            self.update_job(job_id, **{**changes, "report": report_json, "report_pending": stage})
            if attempt is not None:
                self.record_attempt(job_id, attempt[0], **attempt[1])
            return [self.append_event(e) for e in events]

    def select(
        self,
        *,
        state: Sequence[str] = (),
        session: str | None = None,
        principal: str | None = None,
        name: str | None = None,
        active: bool = False,
        limit: int = 200,
        top_level: bool = False,
        array_id: int | None = None,
    ) -> list[JobRecord]:
        """Jobs matching the filters, newest first (`top_level`: arrays but not their tasks)."""
        where: list[str] = []
        args: list[str | int] = []
        if top_level:
            where.append("array_id IS NULL")
        if array_id is not None:
            where.append("array_id=?")
            args.append(array_id)
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
        return _records(self.conn.execute(sql + " ORDER BY id DESC LIMIT ?", (*args, limit)))

    def dependents_waiting(self) -> list[JobRecord]:
        """PENDING jobs that have not been handed to the backend yet (an array's parent row never is)."""
        return _records(self.conn.execute(f"SELECT * FROM jobs WHERE {_WAITING} ORDER BY id"))

    def waiting_on(self, dep_ids: Sequence[int]) -> list[JobRecord]:
        """The waiting jobs that depend on any of these jobs, read through `job_deps` (no other row is read)."""
        found: dict[int, JobRecord] = {}
        for start in range(0, len(dep_ids), 500):
            marks = ",".join("?" for _ in dep_ids[start : start + 500])
            sql = (
                f"SELECT * FROM jobs WHERE id IN (SELECT job_id FROM job_deps WHERE dep_id IN ({marks})) AND {_WAITING}"
            )
            found.update((r.id, r) for r in _records(self.conn.execute(sql, tuple(dep_ids[start : start + 500]))))
        return [found[i] for i in sorted(found)]

    def waiting_among(self, ids: Sequence[int]) -> list[JobRecord]:
        """Those of these jobs that still wait (a retry backoff or a dependency timeout came due)."""
        found: list[JobRecord] = []
        for start in range(0, len(ids), 500):
            marks = ",".join("?" for _ in ids[start : start + 500])
            sql = f"SELECT * FROM jobs WHERE id IN ({marks}) AND {_WAITING}"
            found += _records(self.conn.execute(sql, tuple(ids[start : start + 500])))
        return sorted(found, key=lambda r: r.id)

    def waiting_tasks(self, array_ids: Sequence[int]) -> list[JobRecord]:
        """The waiting tasks of these arrays (a task's end frees a slot of its array's `%N`)."""
        marks = ",".join("?" for _ in array_ids)
        sql = f"SELECT * FROM jobs INDEXED BY jobs_array WHERE array_id IN ({marks}) AND {_WAITING} ORDER BY id"
        return _records(self.conn.execute(sql, tuple(array_ids))) if array_ids else []

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
