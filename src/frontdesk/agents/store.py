"""The agents plug-in's tables: sessions (principals with an ack cursor) and their reports.

Runs on the gateway's sqlite3 connection, from the event-loop thread only. A report is stored once per
(session, job); `ack_seq` is the session's cursor: reports with a larger seq are unread. A hand-over to a
hook holds a lease (`lease_upto`, `lease_until`) until the hook acknowledges; an expired lease means
the report is delivered again. Every query names a session by (user, id): see agents/schema.py.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable
from typing import Any

from frontdesk.agents.framing import PendingReport
from frontdesk.agents.model import Harness, Session, SessionKey, TurnState
from frontdesk.agents.schema import MIGRATIONS
from frontdesk.core.quotas import Limits, over_cap
from frontdesk.errors import Forbidden, NotFound, UserError
from frontdesk.jobs.state import UNFINISHED_STATES

__all__ = ["SessionStore", "MIGRATIONS"]

ROOT = "root"
"""The one principal that may act on another user's session, naming it (`SessionStore.owned`)."""

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
    """Queries over agent_sessions / agent_reports (and a read of the core jobs table).

    A session is named by (user, id) everywhere: `user` is the authenticated principal, never a name a client
    sent, so another user's session is out of reach by construction (its id names the caller's own session)."""

    def __init__(self, conn: sqlite3.Connection, limits: Limits | None = None) -> None:
        self.conn = conn
        self.limits = limits
        """The site's caps: a user's new session past `sessions_per_user` is RateLimited (None: no cap)."""

    # -- sessions ---------------------------------------------------------------------------------
    def get(self, user: str, sid: str) -> Session | None:
        """The session `sid` of `user`, or None."""
        row = self.conn.execute("SELECT * FROM agent_sessions WHERE user=? AND id=?", (user, sid)).fetchone()
        return _row_to_session(row) if row else None

    def owned(self, user: str, sid: str, of: str | None = None, admin: bool = False, read: bool = False) -> Session:
        """The caller's own session `sid`; NotFound otherwise (another user's same id is another session).

        Root or an admin (`admin`: identity's role) acts on another user's session (suspend, drain, resume's
        refusal) by naming that user (`of`); without it, its own session of that id, else, to read (`read`), the
        one user's that holds it (several: UserError naming them). A change never lands on a session not named."""
        admin = admin or user == ROOT
        if of is not None and of != user:
            if not admin:
                raise Forbidden(f"{user} may not act on another user's session (only an admin names one)")
            user = of
        s = self.get(user, sid)
        if s is None and admin and of is None and read:
            rows = self.conn.execute("SELECT * FROM agent_sessions WHERE id=? ORDER BY user", (sid,)).fetchall()
            if len(rows) > 1:
                users = ", ".join(r["user"] for r in rows)
                raise UserError(f"session {sid!r} is held by several users ({users}): name one with ?user=")
            s = _row_to_session(rows[0]) if rows else None
        if s is None:
            raise NotFound(f"no session {sid!r} of yours" if not admin or of is None else f"no session {sid!r}")
        return s

    def upsert(
        self,
        user: str,
        sid: str,
        now: float,
        harness: str | None = None,
        cwd: str | None = None,
        reach: dict[str, Any] | None = None,
    ) -> tuple[Session, bool]:
        """Register or refresh `user`'s session `sid`; (session, created)."""
        cur = self.get(user, sid)
        if cur is None:
            self._may_add(user)
            self.conn.execute(
                "INSERT INTO agent_sessions(user, id, harness, cwd, reach, registered_at, last_seen_at) "
                "VALUES(?,?,?,?,?,?,?)",
                (user, sid, str(Harness.parse(harness)), cwd, json.dumps(reach or {}, sort_keys=True), now, now),
            )
            created = True
        else:
            merged = {**cur.reach, **{k: v for k, v in (reach or {}).items() if v is not None}}
            new_harness = str(Harness.parse(harness)) if harness else str(cur.harness)
            self.conn.execute(
                "UPDATE agent_sessions SET harness=?, cwd=COALESCE(?, cwd), reach=?, last_seen_at=? "
                "WHERE user=? AND id=?",
                (new_harness, cwd, json.dumps(merged, sort_keys=True), now, user, sid),
            )
            created = False
        got = self.get(user, sid)
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

    def set_turn(self, key: SessionKey, state: TurnState, now: float, reset_blocks: bool = False) -> None:
        """Record where the agent is in its loop."""
        extra = ", stop_blocks=0" if reset_blocks else ""
        self.conn.execute(
            f"UPDATE agent_sessions SET turn_state=?, turn_changed_at=?{extra} WHERE user=? AND id=?",
            (str(state), now, *key),
        )

    def count_block(self, key: SessionKey) -> None:
        """A Stop hook blocked once more this turn."""
        self.conn.execute("UPDATE agent_sessions SET stop_blocks=stop_blocks+1 WHERE user=? AND id=?", key)

    def note(self, key: SessionKey, channel: str | None, reason: str) -> None:
        """Remember the last channel decision and why (shown by `frontdesk sessions`)."""
        self.conn.execute(
            "UPDATE agent_sessions SET last_channel=?, last_reason=? WHERE user=? AND id=?", (channel, reason, *key)
        )

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
    def add_report(
        self, key: SessionKey, job_id: int, name: str | None, state: str, text: str, now: float
    ) -> int | None:
        """Store a report for the session once; its seq, or None when it was already stored."""
        cur = self.conn.execute(
            "INSERT OR IGNORE INTO agent_reports(user, session, job_id, name, state, text, arrived_at) "
            "VALUES(?,?,?,?,?,?,?)",
            (*key, job_id, name, state, text, now),
        )
        return cur.lastrowid if cur.rowcount else None

    def unread(self, key: SessionKey, upto: int | None = None) -> list[PendingReport]:
        """Reports after the ack cursor (up to `upto`), oldest first."""
        s = self.get(*key)
        if s is None:
            return []
        sql = (
            "SELECT seq, job_id, name, state, text FROM agent_reports "
            "WHERE user=? AND session=? AND seq>? AND delivered_at IS NULL"
        )
        args: list[Any] = [*key, s.ack_seq]
        if upto is not None:
            sql += " AND seq<=?"
            args.append(upto)
        rows = self.conn.execute(sql + " ORDER BY seq", args).fetchall()
        return [PendingReport(r["seq"], r["job_id"], r["name"], r["state"], r["text"]) for r in rows]

    def last_arrival(self, key: SessionKey) -> float | None:
        """When the newest unread report arrived."""
        s = self.get(*key)
        if s is None:
            return None
        row = self.conn.execute(
            "SELECT MAX(arrived_at) FROM agent_reports WHERE user=? AND session=? AND seq>? AND delivered_at IS NULL",
            (*key, s.ack_seq),
        ).fetchone()
        return row[0] if row and row[0] is not None else None

    def lease(self, key: SessionKey, upto: int, until: float) -> None:
        """Hand reports up to `upto` to a hook; nobody else gets them until `until` or an ack."""
        self.conn.execute(
            "UPDATE agent_sessions SET lease_upto=?, lease_until=? WHERE user=? AND id=?", (upto, until, *key)
        )

    def ack(self, key: SessionKey, upto: int, channel: str, now: float) -> list[int]:
        """Advance the cursor to `upto` (never back); the job ids newly marked delivered."""
        mine = "user=? AND session=? AND seq<=? AND delivered_at IS NULL"
        rows = self.conn.execute(f"SELECT job_id FROM agent_reports WHERE {mine} ORDER BY seq", (*key, upto))
        jobs = [r[0] for r in rows.fetchall()]
        with self.conn:
            self.conn.execute(
                f"UPDATE agent_reports SET delivered_at=?, channel=? WHERE {mine}", (now, channel, *key, upto)
            )
            self.conn.execute(
                "UPDATE agent_sessions SET ack_seq=MAX(ack_seq, ?), lease_upto=0, lease_until=0 WHERE user=? AND id=?",
                (upto, *key),
            )
        return jobs

    def mark_read(self, key: SessionKey, job_ids: Iterable[int], via: str, now: float) -> list[int]:
        """Reports the session read itself (`wait`, `report`, MCP): delivered, never woken for again.

        Only jobs of this session count (its user's jobs naming its id). A report not stored yet (the read beat
        the bus) is stored as read, so the later `add_report` finds it and queues nothing. Returns the jobs
        newly marked.
        """
        marked: list[int] = []
        with self.conn:
            for job in sorted(set(job_ids)):
                row = self.conn.execute("SELECT principal, session FROM jobs WHERE id=?", (job,)).fetchone()
                if row is None or (row[0], row[1]) != key:
                    continue
                self.conn.execute(
                    "INSERT OR IGNORE INTO agent_reports(user, session, job_id, state, text, arrived_at) "
                    "VALUES(?,?,?,'?','',?)",
                    (*key, job, now),
                )
                cur = self.conn.execute(
                    "UPDATE agent_reports SET delivered_at=?, channel=? "
                    "WHERE user=? AND session=? AND job_id=? AND delivered_at IS NULL",
                    (now, via, *key, job),
                )
                if cur.rowcount:
                    marked.append(job)
        return marked

    def with_unread_in(self, user: str, cwd: str, exclude: str) -> list[Session]:
        """Other sessions of `user` in directory `cwd` that have unread reports (candidates for a hand-over)."""
        rows = self.conn.execute(
            "SELECT DISTINCT s.* FROM agent_sessions s JOIN agent_reports r ON r.user=s.user AND r.session=s.id "
            "WHERE s.user=? AND s.cwd=? AND s.id<>? AND r.seq>s.ack_seq AND r.delivered_at IS NULL "
            "AND s.lease_until<=? ORDER BY s.last_seen_at",
            (user, cwd, exclude, time.time()),
        ).fetchall()
        return [_row_to_session(r) for r in rows]

    def move_unread(self, user: str, old: str, new: str) -> list[int]:
        """Hand `user`'s session `old`'s unread reports to its session `new`; the jobs moved."""
        src = self.get(user, old)
        if src is None:
            return []
        with self.conn:
            rows = self.conn.execute(
                "SELECT job_id FROM agent_reports WHERE user=? AND session=? AND seq>? AND delivered_at IS NULL "
                "AND job_id NOT IN (SELECT job_id FROM agent_reports WHERE user=? AND session=?) ORDER BY seq",
                (user, old, src.ack_seq, user, new),
            ).fetchall()
            jobs = [r[0] for r in rows]
            self.conn.executemany(
                "UPDATE agent_reports SET session=? WHERE user=? AND session=? AND job_id=?",
                [(new, user, old, j) for j in jobs],
            )
        return jobs

    def clear_lease(self, key: SessionKey) -> None:
        """Drop a lease (the hook said it could not deliver)."""
        self.conn.execute("UPDATE agent_sessions SET lease_upto=0, lease_until=0 WHERE user=? AND id=?", key)

    def unread_counts(self, keys: Iterable[SessionKey]) -> dict[SessionKey, int]:
        """Unread reports per session."""
        out: dict[SessionKey, int] = {}
        for key in keys:
            row = self.conn.execute(
                "SELECT COUNT(*) FROM agent_reports r JOIN agent_sessions s ON s.user=r.user AND s.id=r.session "
                "WHERE r.user=? AND r.session=? AND r.seq>s.ack_seq AND r.delivered_at IS NULL",
                key,
            ).fetchone()
            out[key] = int(row[0])
        return out

    def sessions_with_unread(self) -> list[SessionKey]:
        """Every session that has reports after its cursor (for the start-up sweep after a restart)."""
        rows = self.conn.execute(
            "SELECT DISTINCT r.user, r.session FROM agent_reports r "
            "JOIN agent_sessions s ON s.user=r.user AND s.id=r.session "
            "WHERE r.seq>s.ack_seq AND r.delivered_at IS NULL"
        ).fetchall()
        return [(r[0], r[1]) for r in rows]

    # -- jobs (read-only view of the core table) ----------------------------------------------------
    def active_jobs(self, key: SessionKey) -> list[dict[str, Any]]:
        """The session's unfinished jobs (its user's, naming its id): id, name, state, started_at, walltime_s."""
        marks = ",".join("?" * len(_ACTIVE))
        try:
            rows = self.conn.execute(
                f"SELECT id, name, state, started_at, submitted_at, spec FROM jobs "
                f"WHERE principal=? AND session=? AND state IN ({marks}) ORDER BY id",
                (*key, *_ACTIVE),
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
