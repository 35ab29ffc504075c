"""The agents plug-in's session tables (sessions keyed by (user, id), their reports) and the journal's keep rule.

A session id is its user's own name: ids are visible to every user (`ps`, the hooks' command lines), so two users
may hold the same id independently and one registering another's id first takes nothing from its owner.
"""

from __future__ import annotations

from frontdesk.store.db import register_schema
from frontdesk.store.retention import register_keep

__all__ = ["MIGRATIONS"]

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
