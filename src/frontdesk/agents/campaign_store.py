"""The campaigns table: each session's turn counter, resume handle, host, plan and resume history.

Runs on the gateway's sqlite3 connection (event-loop thread only), beside agent_sessions. Every change is
written when it happens (a hook, a submission, a resume), so a gateway killed at any point restarts with
the campaign as it was. Jobs, unread reports and lessons are not copied here: they are read from the
tables that own them (jobs, agent_reports, events) when a campaign is loaded.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from frontdesk.agents.campaign import (
    Campaign,
    CampaignJob,
    CampaignReport,
    JobOutcome,
    LessonSeen,
    PlanItem,
    PlanStatus,
)
from frontdesk.agents.campaign_turns import TurnMark
from frontdesk.agents.model import Session, SessionKey
from frontdesk.jobs.record import KEY_SEP
from frontdesk.jobs.state import JobState
from frontdesk.store.db import register_schema

__all__ = ["CampaignStore", "MIGRATIONS", "outcome_of"]

MIGRATIONS = [
    """
    CREATE TABLE agent_campaigns (
        session         TEXT PRIMARY KEY REFERENCES agent_sessions(id),
        turn            INTEGER NOT NULL DEFAULT 0, -- user prompts seen
        continue_turn   INTEGER NOT NULL DEFAULT 0, -- 1 after resuming an unfinished turn: the next prompt keeps `turn`
        incarnation     INTEGER NOT NULL DEFAULT 0, -- resumes so far
        resume_handle   TEXT,                       -- Claude Code session id / Codex thread id
        transcript_path TEXT,
        host            TEXT,                       -- the node the harness last ran on
        plan            TEXT NOT NULL DEFAULT '[]', -- [{"text", "status"}]: the agent's last known plan
        plan_source     TEXT,
        suspended_at    REAL,
        resumed_at      REAL,
        updated_at      REAL NOT NULL DEFAULT 0
    );
    CREATE TABLE agent_turn_counts (
        session     TEXT NOT NULL,
        incarnation INTEGER NOT NULL,
        turn        INTEGER NOT NULL,
        spec_hash   TEXT NOT NULL,
        n           INTEGER NOT NULL DEFAULT 0, -- identical submissions made so far in this turn and incarnation
        PRIMARY KEY (session, incarnation, turn, spec_hash)
    );
    """,
    # issue 18: turns keyed by the harness's own id (agents/campaign_turns.py), so a lost hook shifts nothing
    """
    ALTER TABLE agent_campaigns ADD COLUMN prompt_id TEXT;              -- the harness's id of the current turn
    ALTER TABLE agent_campaigns ADD COLUMN turn_inferred INTEGER NOT NULL DEFAULT 0; -- opened by a submission
    """,
    # sessions are keyed by (user, id) (agents/schema.py, applied before this component): so are their campaigns
    # and turn counts; rebuilt (new table, copy, drop, rename; one transaction, foreign keys off), every row kept
    """
    CREATE TABLE agent_campaigns_new (
        user            TEXT NOT NULL,
        session         TEXT NOT NULL,
        turn            INTEGER NOT NULL DEFAULT 0,
        continue_turn   INTEGER NOT NULL DEFAULT 0,
        incarnation     INTEGER NOT NULL DEFAULT 0,
        resume_handle   TEXT,
        transcript_path TEXT,
        host            TEXT,
        plan            TEXT NOT NULL DEFAULT '[]',
        plan_source     TEXT,
        suspended_at    REAL,
        resumed_at      REAL,
        updated_at      REAL NOT NULL DEFAULT 0,
        prompt_id       TEXT,
        turn_inferred   INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (user, session),
        FOREIGN KEY (user, session) REFERENCES agent_sessions(user, id)
    );
    INSERT INTO agent_campaigns_new(user, session, turn, continue_turn, incarnation, resume_handle, transcript_path,
        host, plan, plan_source, suspended_at, resumed_at, updated_at, prompt_id, turn_inferred)
    SELECT s.user, c.session, c.turn, c.continue_turn, c.incarnation, c.resume_handle, c.transcript_path, c.host,
        c.plan, c.plan_source, c.suspended_at, c.resumed_at, c.updated_at, c.prompt_id, c.turn_inferred
    FROM agent_campaigns c JOIN agent_sessions s ON s.id = c.session;
    CREATE TABLE agent_turn_counts_new (
        user        TEXT NOT NULL,
        session     TEXT NOT NULL,
        incarnation INTEGER NOT NULL,
        turn        INTEGER NOT NULL,
        spec_hash   TEXT NOT NULL,
        n           INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (user, session, incarnation, turn, spec_hash)
    );
    INSERT INTO agent_turn_counts_new(user, session, incarnation, turn, spec_hash, n)
    SELECT s.user, t.session, t.incarnation, t.turn, t.spec_hash, t.n
    FROM agent_turn_counts t JOIN agent_sessions s ON s.id = t.session;
    DROP TABLE agent_campaigns;
    DROP TABLE agent_turn_counts;
    ALTER TABLE agent_campaigns_new RENAME TO agent_campaigns;
    ALTER TABLE agent_turn_counts_new RENAME TO agent_turn_counts;
    """,
]
register_schema("agents_campaign", MIGRATIONS)


def outcome_of(state: str) -> JobOutcome:
    """A job state as the summary groups it."""
    try:
        js = JobState(state)
    except ValueError:
        return JobOutcome.PENDING
    if not js.terminal:
        return JobOutcome.PENDING
    return JobOutcome.COMPLETED if js is JobState.COMPLETED else JobOutcome.FAILED


def _key_as_given(stored: str | None) -> str | None:
    """An idempotency key as its submitter gave it (stored in the principal's namespace: jobs.record.scoped_key)."""
    return None if stored is None else stored.partition(KEY_SEP)[2] or stored


def _plan(raw: str | None) -> tuple[PlanItem, ...]:
    try:
        items = json.loads(raw or "[]")
    except ValueError:
        return ()
    if not isinstance(items, list):
        return ()
    return tuple(
        PlanItem(str(i.get("text", "")), PlanStatus.parse(i.get("status"))) for i in items if isinstance(i, dict)
    )


def _cause(report: str | None) -> str | None:
    """The classified cause in a stored report, shortened."""
    try:
        got = json.loads(report or "null")
    except ValueError:
        return None
    cls = got.get("classification") if isinstance(got, dict) else None
    cause = cls.get("cause") if isinstance(cls, dict) else None
    return " ".join(cause.split())[:160] if isinstance(cause, str) and cause.strip() else None


class CampaignStore:
    """Checkpoints of campaigns, and their assembly from the gateway's other tables."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def _row(self, key: SessionKey) -> sqlite3.Row | None:
        row: sqlite3.Row | None = self.conn.execute(
            "SELECT * FROM agent_campaigns WHERE user=? AND session=?", key
        ).fetchone()
        return row

    def ensure(self, key: SessionKey, now: float) -> None:
        """The session's campaign row exists."""
        self.conn.execute(
            "INSERT OR IGNORE INTO agent_campaigns(user, session, updated_at) VALUES(?, ?, ?)", (*key, now)
        )

    def checkpoint(
        self,
        key: SessionKey,
        now: float,
        *,
        handle: str | None = None,
        transcript: str | None = None,
        host: str | None = None,
        plan: Sequence[PlanItem] | None = None,
        plan_source: str | None = None,
    ) -> None:
        """Record what a hook or a submission told about the session (None leaves a field as it is)."""
        self.ensure(key, now)
        plan_json = json.dumps([p.to_dict() for p in plan]) if plan is not None else None
        self.conn.execute(
            "UPDATE agent_campaigns SET resume_handle=COALESCE(?, resume_handle), "
            "transcript_path=COALESCE(?, transcript_path), host=COALESCE(?, host), plan=COALESCE(?, plan), "
            "plan_source=COALESCE(?, plan_source), updated_at=? WHERE user=? AND session=?",
            (handle, transcript, host, plan_json, plan_source if plan is not None else None, now, *key),
        )

    def mark(self, key: SessionKey, now: float) -> TurnMark:
        """Where the session's turns stand."""
        self.ensure(key, now)
        row = self._row(key)
        assert row is not None
        return TurnMark(int(row["turn"]), row["prompt_id"], bool(row["continue_turn"]), bool(row["turn_inferred"]))

    def set_mark(self, key: SessionKey, mark: TurnMark, now: float) -> None:
        """Record a turn transition (one statement: a gateway killed mid-way keeps the old or the new mark)."""
        self.conn.execute(
            "UPDATE agent_campaigns SET turn=?, prompt_id=?, continue_turn=?, turn_inferred=?, updated_at=? "
            "WHERE user=? AND session=?",
            (mark.turn, mark.prompt_id, int(mark.continue_turn), int(mark.inferred), now, *key),
        )

    def next_ordinal(self, key: SessionKey, spec_hash: str, now: float) -> tuple[int, int]:
        """(turn, n): this is the n-th submission of this spec in the session's turn (this incarnation)."""
        self.ensure(key, now)
        row = self._row(key)
        assert row is not None
        turn, inc = int(row["turn"]), int(row["incarnation"])
        with self.conn:
            self.conn.execute(
                "INSERT INTO agent_turn_counts(user, session, incarnation, turn, spec_hash, n) VALUES(?,?,?,?,?,1) "
                "ON CONFLICT(user, session, incarnation, turn, spec_hash) DO UPDATE SET n=n+1",
                (*key, inc, turn, spec_hash),
            )
        got = self.conn.execute(
            "SELECT n FROM agent_turn_counts WHERE user=? AND session=? AND incarnation=? AND turn=? AND spec_hash=?",
            (*key, inc, turn, spec_hash),
        ).fetchone()
        return turn, int(got[0]) - 1

    def resumed(self, key: SessionKey, now: float, continue_turn: bool) -> None:
        """A resume starts: a new incarnation; an unfinished turn is replayed under the same number."""
        self.ensure(key, now)
        with self.conn:
            self.conn.execute(
                "UPDATE agent_campaigns SET incarnation=incarnation+1, continue_turn=?, turn_inferred=0, resumed_at=?, "
                "suspended_at=NULL, updated_at=? WHERE user=? AND session=?",
                (int(continue_turn), now, now, *key),
            )

    def suspended(self, key: SessionKey, now: float) -> None:
        """The harness was ended on purpose (suspend, drain); its jobs go on."""
        self.ensure(key, now)
        self.conn.execute(
            "UPDATE agent_campaigns SET suspended_at=?, updated_at=? WHERE user=? AND session=?", (now, now, *key)
        )

    def hosts(self, keys: Sequence[SessionKey]) -> dict[SessionKey, str | None]:
        """The node each session last ran on."""
        out: dict[SessionKey, str | None] = {}
        for key in keys:
            row = self._row(key)
            out[key] = row["host"] if row is not None else None
        return out

    # -- assembly ---------------------------------------------------------------------------------------
    def load(self, s: Session) -> Campaign:
        """The session's campaign, with its jobs, unread reports and lessons read from their own tables."""
        row = self._row(s.key)
        get = (lambda k: row[k]) if row is not None else (lambda k: None)
        pid = s.reach.get("pid")
        return Campaign(
            session=s.id,
            user=s.user,
            harness=s.harness,
            cwd=s.cwd,
            host=get("host") or s.reach.get("host"),
            turn_state=s.turn_state,
            turn=int(get("turn") or 0),
            turn_inferred=bool(get("turn_inferred")),
            incarnation=int(get("incarnation") or 0),
            resume_handle=get("resume_handle"),
            transcript_path=get("transcript_path") or s.reach.get("transcript_path"),
            pid=pid if isinstance(pid, int) else None,
            jobs=self._jobs(s.key),
            unread=self._unread(s),
            lessons=self._lessons(s.key),
            plan=_plan(get("plan")),
            plan_source=get("plan_source"),
            suspended_at=get("suspended_at"),
            resumed_at=get("resumed_at"),
            updated_at=float(get("updated_at") or s.last_seen_at),
        )

    def _jobs(self, key: SessionKey) -> tuple[CampaignJob, ...]:
        rows = self.conn.execute(
            "SELECT id, name, state, reason, exit_code, idempotency_key, report FROM jobs "
            "WHERE principal=? AND session=? ORDER BY id",
            key,
        ).fetchall()
        return tuple(
            CampaignJob(
                id=r["id"],
                name=r["name"],
                state=r["state"],
                outcome=outcome_of(r["state"]),
                idempotency_key=_key_as_given(r["idempotency_key"]),
                reason=r["reason"],
                exit_code=r["exit_code"],
                cause=_cause(r["report"]) if outcome_of(r["state"]) is JobOutcome.FAILED else None,
            )
            for r in rows
        )

    def _unread(self, s: Session) -> tuple[CampaignReport, ...]:
        rows = self.conn.execute(
            "SELECT job_id, name, state, text FROM agent_reports "
            "WHERE user=? AND session=? AND seq>? AND delivered_at IS NULL ORDER BY seq",
            (*s.key, s.ack_seq),
        ).fetchall()
        return tuple(CampaignReport(r["job_id"], r["name"], r["state"], r["text"]) for r in rows)

    def _lessons(self, key: SessionKey) -> tuple[LessonSeen, ...]:
        rows = self.conn.execute(
            "SELECT job_id, data FROM events WHERE principal=? AND session=? AND kind='job.warning' ORDER BY seq", key
        ).fetchall()
        out: dict[int, LessonSeen] = {}
        for r in rows:
            try:
                data = json.loads(r["data"])
            except ValueError:
                continue
            lid = data.get("lesson_id") if isinstance(data, dict) else None
            if isinstance(lid, int) and lid not in out:
                out[lid] = LessonSeen(lid, r["job_id"], str(data.get("text") or ""))
        return tuple(out.values())
