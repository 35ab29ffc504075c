"""The agents plug-in's tables: sessions (principals with an ack cursor) and their reports.

Runs on the gateway's sqlite3 connection, from the event-loop thread only. A report is stored once per
(session, job); `ack_seq` is the session's cursor: reports with a larger seq are unread. A hand-over to a
hook holds a lease (`lease_upto`, `lease_until`) until the hook acknowledges; an expired lease means
the report is delivered again.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable
from typing import Any

from frontdesk.agents.framing import PendingReport
from frontdesk.agents.model import Harness, Session, TurnState
from frontdesk.core.quotas import Limits, over_cap
from frontdesk.errors import Forbidden, NotFound
from frontdesk.jobs.state import UNFINISHED_STATES
from frontdesk.store.db import register_schema
from frontdesk.store.retention import register_keep

__all__ = ["SessionStore", "MIGRATIONS"]

MIGRATIONS = [
    """
    CREATE TABLE agent_sessions (
        id              TEXT PRIMARY KEY,         -- the harness's session id (Claude session, Codex thread)
        user            TEXT NOT NULL,            -- the owning principal: only it reads or wakes the session
        harness         TEXT NOT NULL DEFAULT 'other',
        cwd             TEXT,
        reach           TEXT NOT NULL DEFAULT '{}', -- how to reach it: pid, tmux socket/pane, hooks seen
        turn_state      TEXT NOT NULL DEFAULT 'unknown',
        turn_changed_at REAL NOT NULL DEFAULT 0,
        stop_blocks     INTEGER NOT NULL DEFAULT 0, -- consecutive Stop-hook blocks this turn
        ack_seq         INTEGER NOT NULL DEFAULT 0, -- the ack cursor over agent_reports.seq
        lease_upto      INTEGER NOT NULL DEFAULT 0,
        lease_until     REAL NOT NULL DEFAULT 0,
        registered_at   REAL NOT NULL,
        last_seen_at    REAL NOT NULL,
        last_channel    TEXT,
        last_reason     TEXT
    );
    CREATE TABLE agent_reports (
        seq          INTEGER PRIMARY KEY AUTOINCREMENT,
        session      TEXT NOT NULL REFERENCES agent_sessions(id),
        job_id       INTEGER NOT NULL,
        name         TEXT,
        state        TEXT NOT NULL,
        text         TEXT NOT NULL,
        arrived_at   REAL NOT NULL,
        delivered_at REAL,
        channel      TEXT,
        UNIQUE (session, job_id)
    );
    CREATE INDEX agent_reports_session ON agent_reports(session, seq);
    """,
    # each user's sessions counted against the site's cap ([limits].sessions_per_user, core/quotas.py)
    "CREATE INDEX agent_sessions_user ON agent_sessions(user);",
    # a session id is its user's own name (ids are visible to every user: `ps`, hook command lines), so the key is
    # (user, id) and a report names both; the tables rebuilt (SQLite's procedure: new table, copy, drop, rename;
    # store/db.py runs a migration in one transaction with foreign keys off), every row kept
    """
    CREATE TABLE agent_sessions_new (
        user            TEXT NOT NULL,            -- the owning principal: only it reads or wakes the session
        id              TEXT NOT NULL,            -- the harness's session id (Claude session, Codex thread)
        harness         TEXT NOT NULL DEFAULT 'other',
        cwd             TEXT,
        reach           TEXT NOT NULL DEFAULT '{}',
        turn_state      TEXT NOT NULL DEFAULT 'unknown',
        turn_changed_at REAL NOT NULL DEFAULT 0,
        stop_blocks     INTEGER NOT NULL DEFAULT 0,
        ack_seq         INTEGER NOT NULL DEFAULT 0,
        lease_upto      INTEGER NOT NULL DEFAULT 0,
        lease_until     REAL NOT NULL DEFAULT 0,
        registered_at   REAL NOT NULL,
        last_seen_at    REAL NOT NULL,
        last_channel    TEXT,
        last_reason     TEXT,
        PRIMARY KEY (user, id)
    );
    INSERT INTO agent_sessions_new(user, id, harness, cwd, reach, turn_state, turn_changed_at, stop_blocks, ack_seq,
        lease_upto, lease_until, registered_at, last_seen_at, last_channel, last_reason)
    SELECT user, id, harness, cwd, reach, turn_state, turn_changed_at, stop_blocks, ack_seq, lease_upto, lease_until,
        registered_at, last_seen_at, last_channel, last_reason FROM agent_sessions;
    CREATE TABLE agent_reports_new (
        seq          INTEGER PRIMARY KEY AUTOINCREMENT,
        user         TEXT NOT NULL,
        session      TEXT NOT NULL,
        job_id       INTEGER NOT NULL,
        name         TEXT,
        state        TEXT NOT NULL,
        text         TEXT NOT NULL,
        arrived_at   REAL NOT NULL,
        delivered_at REAL,
        channel      TEXT,
        UNIQUE (user, session, job_id),
        FOREIGN KEY (user, session) REFERENCES agent_sessions_new(user, id)
    );
    INSERT INTO agent_reports_new(seq, user, session, job_id, name, state, text, arrived_at, delivered_at, channel)
    SELECT r.seq, s.user, r.session, r.job_id, r.name, r.state, r.text, r.arrived_at, r.delivered_at, r.channel
    FROM agent_reports r JOIN agent_sessions s ON s.id = r.session;
    -- seqs are never reused (AUTOINCREMENT): the new table continues from the old one's counter
    DELETE FROM sqlite_sequence WHERE name = 'agent_reports_new';
    INSERT INTO sqlite_sequence(name, seq) SELECT 'agent_reports_new', seq FROM sqlite_sequence
        WHERE name = 'agent_reports';
    DROP TABLE agent_reports;
    DROP TABLE agent_sessions;
    ALTER TABLE agent_sessions_new RENAME TO agent_sessions;
    ALTER TABLE agent_reports_new RENAME TO agent_reports;
    CREATE INDEX agent_sessions_user ON agent_sessions(user, last_seen_at);
    CREATE INDEX agent_reports_session ON agent_reports(user, session, seq);
    """,
]
register_schema("agents", MIGRATIONS)
register_keep(  # the journal keeps a session's events while it has reports it has not acknowledged
    "agents",
    "(principal, session) IN (SELECT r.user, r.session FROM agent_reports r"
    " JOIN agent_sessions s ON s.user = r.user AND s.id = r.session WHERE r.seq > s.ack_seq)",
)

_ACTIVE = tuple(s.value for s in UNFINISHED_STATES)
"""The states of a job that has not ended (the core table stores only JobState values)."""


def _row_to_session(row: sqlite3.Row) -> Session:
    return Session(
        id=row["id"],
        user=row["user"],
        harness=Harness.parse(row["harness"]),
        cwd=row["cwd"],
        reach=json.loads(row["reach"] or "{}"),
        turn_state=TurnState(row["turn_state"]),
        turn_changed_at=row["turn_changed_at"],
        stop_blocks=row["stop_blocks"],
        ack_seq=row["ack_seq"],
        lease_upto=row["lease_upto"],
        lease_until=row["lease_until"],
        registered_at=row["registered_at"],
        last_seen_at=row["last_seen_at"],
        last_channel=row["last_channel"],
        last_reason=row["last_reason"],
    )


class SessionStore:
    """Queries over agent_sessions / agent_reports (and a read of the core jobs table)."""

    def __init__(self, conn: sqlite3.Connection, limits: Limits | None = None) -> None:
        self.conn = conn
        self.limits = limits
        """The site's caps: a user's new session past `sessions_per_user` is RateLimited (None: no cap)."""

    # -- sessions ---------------------------------------------------------------------------------
    def get(self, sid: str) -> Session | None:
        """One session, or None."""
        row = self.conn.execute("SELECT * FROM agent_sessions WHERE id=?", (sid,)).fetchone()
        return _row_to_session(row) if row else None

    def owned(self, sid: str, user: str) -> Session:
        """The session if `user` owns it (root reads any); NotFound otherwise (no existence leak)."""
        s = self.get(sid)
        if s is None or (s.user != user and user != "root"):
            raise NotFound(f"no session {sid!r} of yours")
        return s

    def upsert(
        self,
        sid: str,
        user: str,
        now: float,
        harness: str | None = None,
        cwd: str | None = None,
        reach: dict[str, Any] | None = None,
    ) -> tuple[Session, bool]:
        """Register or refresh a session; (session, created). Another user's id is Forbidden."""
        cur = self.get(sid)
        if cur is not None and cur.user != user:
            raise Forbidden(f"session {sid!r} belongs to another user")
        if cur is None:
            self._may_add(user)
            self.conn.execute(
                "INSERT INTO agent_sessions(id, user, harness, cwd, reach, registered_at, last_seen_at) "
                "VALUES(?,?,?,?,?,?,?)",
                (sid, user, str(Harness.parse(harness)), cwd, json.dumps(reach or {}, sort_keys=True), now, now),
            )
            created = True
        else:
            merged = {**cur.reach, **{k: v for k, v in (reach or {}).items() if v is not None}}
            new_harness = str(Harness.parse(harness)) if harness else str(cur.harness)
            self.conn.execute(
                "UPDATE agent_sessions SET harness=?, cwd=COALESCE(?, cwd), reach=?, last_seen_at=? WHERE id=?",
                (new_harness, cwd, json.dumps(merged, sort_keys=True), now, sid),
            )
            created = False
        got = self.get(sid)
        assert got is not None
        return got, created

    def _may_add(self, user: str) -> None:
        """RateLimited when `user` already has the site's cap of sessions (admins exempt)."""
        limits = self.limits
        if limits is None or not limits.sessions or limits.exempt(user):
            return
        have = self.conn.execute("SELECT count(*) FROM agent_sessions WHERE user=?", (user,)).fetchone()[0]
        if have >= limits.sessions:
            raise over_cap(f"{have} agent sessions", limits.sessions, "sessions_per_user")

    def set_turn(self, sid: str, state: TurnState, now: float, reset_blocks: bool = False) -> None:
        """Record where the agent is in its loop."""
        extra = ", stop_blocks=0" if reset_blocks else ""
        self.conn.execute(
            f"UPDATE agent_sessions SET turn_state=?, turn_changed_at=?{extra} WHERE id=?", (str(state), now, sid)
        )

    def count_block(self, sid: str) -> None:
        """A Stop hook blocked once more this turn."""
        self.conn.execute("UPDATE agent_sessions SET stop_blocks=stop_blocks+1 WHERE id=?", (sid,))

    def note(self, sid: str, channel: str | None, reason: str) -> None:
        """Remember the last channel decision and why (shown by `frontdesk sessions`)."""
        self.conn.execute("UPDATE agent_sessions SET last_channel=?, last_reason=? WHERE id=?", (channel, reason, sid))

    def list_sessions(self, user: str | None) -> list[Session]:
        """Sessions of `user` (all when None), most recently seen first."""
        if user is None:
            rows = self.conn.execute("SELECT * FROM agent_sessions ORDER BY last_seen_at DESC").fetchall()
        else:
            rows = self.conn.execute(
                "SELECT * FROM agent_sessions WHERE user=? ORDER BY last_seen_at DESC", (user,)
            ).fetchall()
        return [_row_to_session(r) for r in rows]

    # -- reports ----------------------------------------------------------------------------------
    def add_report(self, sid: str, job_id: int, name: str | None, state: str, text: str, now: float) -> int | None:
        """Store a report for the session once; its seq, or None when it was already stored."""
        cur = self.conn.execute(
            "INSERT OR IGNORE INTO agent_reports(session, job_id, name, state, text, arrived_at) VALUES(?,?,?,?,?,?)",
            (sid, job_id, name, state, text, now),
        )
        return cur.lastrowid if cur.rowcount else None

    def unread(self, sid: str, upto: int | None = None) -> list[PendingReport]:
        """Reports after the ack cursor (up to `upto`), oldest first."""
        s = self.get(sid)
        if s is None:
            return []
        sql = (
            "SELECT seq, job_id, name, state, text FROM agent_reports "
            "WHERE session=? AND seq>? AND delivered_at IS NULL"
        )
        args: list[Any] = [sid, s.ack_seq]
        if upto is not None:
            sql += " AND seq<=?"
            args.append(upto)
        rows = self.conn.execute(sql + " ORDER BY seq", args).fetchall()
        return [PendingReport(r["seq"], r["job_id"], r["name"], r["state"], r["text"]) for r in rows]

    def last_arrival(self, sid: str) -> float | None:
        """When the newest unread report arrived."""
        s = self.get(sid)
        if s is None:
            return None
        row = self.conn.execute(
            "SELECT MAX(arrived_at) FROM agent_reports WHERE session=? AND seq>? AND delivered_at IS NULL",
            (sid, s.ack_seq),
        ).fetchone()
        return row[0] if row and row[0] is not None else None

    def lease(self, sid: str, upto: int, until: float) -> None:
        """Hand reports up to `upto` to a hook; nobody else gets them until `until` or an ack."""
        self.conn.execute("UPDATE agent_sessions SET lease_upto=?, lease_until=? WHERE id=?", (upto, until, sid))

    def ack(self, sid: str, upto: int, channel: str, now: float) -> list[int]:
        """Advance the cursor to `upto` (never back); the job ids newly marked delivered."""
        rows = self.conn.execute(
            "SELECT job_id FROM agent_reports WHERE session=? AND seq<=? AND delivered_at IS NULL ORDER BY seq",
            (sid, upto),
        ).fetchall()
        with self.conn:
            self.conn.execute(
                "UPDATE agent_reports SET delivered_at=?, channel=? "
                "WHERE session=? AND seq<=? AND delivered_at IS NULL",
                (now, channel, sid, upto),
            )
            self.conn.execute(
                "UPDATE agent_sessions SET ack_seq=MAX(ack_seq, ?), lease_upto=0, lease_until=0 WHERE id=?", (upto, sid)
            )
        return [r[0] for r in rows]

    def mark_read(self, sid: str, job_ids: Iterable[int], via: str, now: float) -> list[int]:
        """Reports the session read itself (`wait`, `report`, MCP): delivered, never woken for again.

        Only jobs of this session count. A report not stored yet (the read beat the bus) is stored as read,
        so the later `add_report` finds it and queues nothing. Returns the jobs newly marked.
        """
        marked: list[int] = []
        with self.conn:
            for job in sorted(set(job_ids)):
                row = self.conn.execute("SELECT session FROM jobs WHERE id=?", (job,)).fetchone()
                if row is None or row[0] != sid:
                    continue
                self.conn.execute(
                    "INSERT OR IGNORE INTO agent_reports(session, job_id, state, text, arrived_at) "
                    "VALUES(?,?,'?','',?)",
                    (sid, job, now),
                )
                cur = self.conn.execute(
                    "UPDATE agent_reports SET delivered_at=?, channel=? "
                    "WHERE session=? AND job_id=? AND delivered_at IS NULL",
                    (now, via, sid, job),
                )
                if cur.rowcount:
                    marked.append(job)
        return marked

    def with_unread_in(self, user: str, cwd: str, exclude: str) -> list[Session]:
        """Other sessions of `user` in directory `cwd` that have unread reports (candidates for a hand-over)."""
        rows = self.conn.execute(
            "SELECT DISTINCT s.* FROM agent_sessions s JOIN agent_reports r ON r.session=s.id "
            "WHERE s.user=? AND s.cwd=? AND s.id<>? AND r.seq>s.ack_seq AND r.delivered_at IS NULL "
            "AND s.lease_until<=? ORDER BY s.last_seen_at",
            (user, cwd, exclude, time.time()),
        ).fetchall()
        return [_row_to_session(r) for r in rows]

    def move_unread(self, old: str, new: str) -> list[int]:
        """Hand `old`'s unread reports to session `new` (same user, checked by the caller); the jobs moved."""
        src = self.get(old)
        if src is None:
            return []
        with self.conn:
            rows = self.conn.execute(
                "SELECT job_id FROM agent_reports WHERE session=? AND seq>? AND delivered_at IS NULL "
                "AND job_id NOT IN (SELECT job_id FROM agent_reports WHERE session=?) ORDER BY seq",
                (old, src.ack_seq, new),
            ).fetchall()
            jobs = [r[0] for r in rows]
            self.conn.executemany(
                "UPDATE agent_reports SET session=? WHERE session=? AND job_id=?", [(new, old, j) for j in jobs]
            )
        return jobs

    def clear_lease(self, sid: str) -> None:
        """Drop a lease (the hook said it could not deliver)."""
        self.conn.execute("UPDATE agent_sessions SET lease_upto=0, lease_until=0 WHERE id=?", (sid,))

    def unread_counts(self, sids: Iterable[str]) -> dict[str, int]:
        """Unread reports per session."""
        out: dict[str, int] = {}
        for sid in sids:
            row = self.conn.execute(
                "SELECT COUNT(*) FROM agent_reports r JOIN agent_sessions s ON s.id=r.session "
                "WHERE r.session=? AND r.seq>s.ack_seq AND r.delivered_at IS NULL",
                (sid,),
            ).fetchone()
            out[sid] = int(row[0])
        return out

    def sessions_with_unread(self) -> list[str]:
        """Every session that has reports after its cursor (for the start-up sweep after a restart)."""
        rows = self.conn.execute(
            "SELECT DISTINCT r.session FROM agent_reports r JOIN agent_sessions s ON s.id=r.session "
            "WHERE r.seq>s.ack_seq AND r.delivered_at IS NULL"
        ).fetchall()
        return [r[0] for r in rows]

    # -- jobs (read-only view of the core table) ----------------------------------------------------
    def active_jobs(self, sid: str) -> list[dict[str, Any]]:
        """The session's jobs that have not ended: id, name, state, started_at, walltime_s."""
        marks = ",".join("?" * len(_ACTIVE))
        try:
            rows = self.conn.execute(
                f"SELECT id, name, state, started_at, submitted_at, spec FROM jobs "
                f"WHERE session=? AND state IN ({marks}) ORDER BY id",
                (sid, *_ACTIVE),
            ).fetchall()
        except sqlite3.OperationalError:
            return []
        out = []
        for r in rows:
            try:
                wall = (json.loads(r["spec"]).get("resources") or {}).get("walltime")
            except (ValueError, AttributeError):
                wall = None
            out.append(
                {
                    "id": r["id"],
                    "name": r["name"],
                    "state": r["state"],
                    "started_at": r["started_at"],
                    "submitted_at": r["submitted_at"],
                    "walltime_s": wall,
                }
            )
        return out
