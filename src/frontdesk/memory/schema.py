"""The memory tables in the gateway's SQLite database: lessons (with their FTS5 index) and runs.

Registered with the store's migrations on import; `PRAGMA user_version` per component applies them.
"""

from __future__ import annotations

from frontdesk.store.db import register_schema

__all__ = ["MIGRATIONS"]

MIGRATIONS = [
    """
    CREATE TABLE memory_lessons (
        id            INTEGER PRIMARY KEY AUTOINCREMENT,
        scope         TEXT NOT NULL,              -- user | project | lab | cluster
        scope_name    TEXT NOT NULL,              -- the user, project or lab; '*' for the cluster
        signature     TEXT NOT NULL,              -- Signature.key: STATE:kind:detail
        kind          TEXT NOT NULL,
        state         TEXT,
        cause         TEXT NOT NULL,
        detail        TEXT NOT NULL DEFAULT '',
        line          TEXT NOT NULL DEFAULT '',   -- the normalised log line that decided it
        template      TEXT NOT NULL DEFAULT '',   -- '' for substrate lessons matched by application
        application   TEXT NOT NULL DEFAULT '',
        modules       TEXT NOT NULL DEFAULT '[]',
        partition     TEXT,
        requested     TEXT NOT NULL DEFAULT '{}',
        conditions    TEXT NOT NULL DEFAULT '{}',
        fix           TEXT,                       -- {"changes", "evidence": [failed, completed], "at"}
        fix_text      TEXT NOT NULL DEFAULT '',
        source        TEXT NOT NULL,              -- scheduler | site | agent | person
        created_at    REAL NOT NULL,
        created_by    TEXT NOT NULL,
        confirmed_at  REAL NOT NULL,
        times_seen    INTEGER NOT NULL DEFAULT 1,
        times_held    INTEGER NOT NULL DEFAULT 0,
        status        TEXT NOT NULL DEFAULT 'active',  -- active | stale | invalid
        status_reason TEXT,
        evidence      TEXT NOT NULL DEFAULT '[]',
        origin_id     INTEGER,
        promoted_by   TEXT,
        updated_at    REAL NOT NULL
    );
    CREATE UNIQUE INDEX memory_lessons_identity ON memory_lessons(scope, scope_name, signature, template);
    CREATE INDEX memory_lessons_template ON memory_lessons(template);
    CREATE INDEX memory_lessons_application ON memory_lessons(application);
    CREATE VIRTUAL TABLE memory_fts USING fts5(
        cause, line, template, application, fix_text, content='memory_lessons', content_rowid='id');
    CREATE TRIGGER memory_lessons_ai AFTER INSERT ON memory_lessons BEGIN
        INSERT INTO memory_fts(rowid, cause, line, template, application, fix_text)
        VALUES (new.id, new.cause, new.line, new.template, new.application, new.fix_text);
    END;
    CREATE TRIGGER memory_lessons_ad AFTER DELETE ON memory_lessons BEGIN
        INSERT INTO memory_fts(memory_fts, rowid, cause, line, template, application, fix_text)
        VALUES ('delete', old.id, old.cause, old.line, old.template, old.application, old.fix_text);
    END;
    CREATE TRIGGER memory_lessons_au AFTER UPDATE ON memory_lessons BEGIN
        INSERT INTO memory_fts(memory_fts, rowid, cause, line, template, application, fix_text)
        VALUES ('delete', old.id, old.cause, old.line, old.template, old.application, old.fix_text);
        INSERT INTO memory_fts(rowid, cause, line, template, application, fix_text)
        VALUES (new.id, new.cause, new.line, new.template, new.application, new.fix_text);
    END;
    CREATE TABLE memory_runs (
        job_id      INTEGER PRIMARY KEY,
        principal   TEXT NOT NULL,
        template    TEXT NOT NULL,
        application TEXT NOT NULL DEFAULT '',
        state       TEXT NOT NULL,
        signature   TEXT,
        kind        TEXT,
        requested   TEXT NOT NULL,
        used        TEXT NOT NULL,
        ended_at    REAL NOT NULL
    );
    CREATE INDEX memory_runs_template ON memory_runs(template, principal);
    CREATE INDEX memory_runs_signature ON memory_runs(signature);
    """,
    # 2: template-less (substrate) lessons are told apart by application
    """
    DROP INDEX memory_lessons_identity;
    CREATE UNIQUE INDEX memory_lessons_identity2
        ON memory_lessons(scope, scope_name, signature, template, application);
    """,
    # 3: indexes for ageing, substrate matching and the site rule's distinct-users count
    """
    CREATE INDEX memory_lessons_status ON memory_lessons(status, confirmed_at);
    DROP INDEX memory_lessons_template;
    DROP INDEX memory_lessons_application;
    CREATE INDEX memory_lessons_template_app ON memory_lessons(template, application);
    DROP INDEX memory_runs_signature;
    CREATE INDEX memory_runs_signature_principal ON memory_runs(signature, principal);
    """,
    # 4: a lab lesson one member promoted is a proposal (pending_by: who) until a second member or an admin
    # approves it (approved_by); a proposal is read only by its lab's members, for review, and told to no agent
    """
    ALTER TABLE memory_lessons ADD COLUMN pending_by TEXT;
    ALTER TABLE memory_lessons ADD COLUMN approved_by TEXT;
    """,
]
register_schema("memory", MIGRATIONS)
