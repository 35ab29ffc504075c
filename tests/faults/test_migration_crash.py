"""A gateway killed in the middle of a schema migration, and a gateway older than its database.

The database is one the last release left (sessions keyed by id, lessons without pending_by/approved_by), made by
the released migrations themselves and filled with rows of every table the pending migrations rebuild. A real
gateway is SIGKILLed at `migration_uncommitted:n` (the n-th pending migration run, not committed) and
`migration_committed:n` (committed, the next not started: store/db.apply_schema); the database is then checked as
it lies (each component's schema is exactly its stored version, no half-built table), and a plain restart must
finish the upgrade with every row kept, each session's reports its own user's, no foreign key broken.
A database a newer frontdesk wrote is refused at start with one line, and left as it was.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from frontdesk.agents.campaign_store import MIGRATIONS as CAMPAIGN_MIGRATIONS
from frontdesk.agents.schema import MIGRATIONS as AGENT_MIGRATIONS
from frontdesk.memory.schema import MIGRATIONS as MEMORY_MIGRATIONS
from frontdesk.policy.history import MIGRATIONS as POLICY_MIGRATIONS
from frontdesk.store.db import _core_migrations, apply_schema

pytestmark = pytest.mark.slow

SESSIONS = {"s-a1": "alice", "s-a2": "alice", "s-b1": "bob"}
REPORTS = 3000  # seq n belongs to session list(SESSIONS)[n % 3]
ACKED = {"s-a1": 30, "s-a2": 0, "s-b1": 3000}  # ack cursors over seq


def _old_home(home: Path) -> None:
    conn = sqlite3.connect(home / "frontdesk.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA foreign_keys=ON")
    apply_schema(conn, "core", _core_migrations())
    apply_schema(conn, "agents", AGENT_MIGRATIONS[:2])
    apply_schema(conn, "agents_campaign", CAMPAIGN_MIGRATIONS[:2])
    apply_schema(conn, "memory", MEMORY_MIGRATIONS[:3])
    apply_schema(conn, "policy", POLICY_MIGRATIONS)
    conn.execute("BEGIN")
    for sid, user in SESSIONS.items():
        conn.execute(
            "INSERT INTO agent_sessions(id, user, harness, turn_state, ack_seq, registered_at, last_seen_at) "
            "VALUES(?, ?, 'claude-code', 'idle', ?, 1, 2)",
            (sid, user, ACKED[sid]),
        )
        conn.execute("INSERT INTO agent_campaigns(session, turn, updated_at) VALUES(?, 4, 1)", (sid,))
        conn.execute(
            "INSERT INTO agent_turn_counts(session, incarnation, turn, spec_hash, n) VALUES(?, 0, 4, 'h', 2)", (sid,)
        )
    sids = list(SESSIONS)
    conn.executemany(
        "INSERT INTO agent_reports(seq, session, job_id, state, text, arrived_at) VALUES(?, ?, ?, 'FAILED', ?, 1)",
        ((n, sids[n % 3], 10_000 + n, "a report " * 20) for n in range(1, REPORTS + 1)),
    )
    for n, who in enumerate(("alice", "bob"), start=1):
        conn.execute(
            "INSERT INTO memory_lessons(scope, scope_name, signature, kind, cause, template, source, created_at, "
            "created_by, confirmed_at, updated_at) VALUES('user', ?, ?, 'oom', 'cause', 'python t.py', 'person', "
            "1, ?, 1, 1)",
            (who, f"FAILED:oom:{n}", who),
        )
    conn.execute("COMMIT")
    conn.close()


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}


def _as_it_lies(path: Path) -> dict[str, int]:
    """Each component's stored version, checked against the schema actually there (nothing half-migrated)."""
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    versions = dict(conn.execute("SELECT component, version FROM schema_versions").fetchall())
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert not {t for t in tables if t.endswith("_new")}, tables  # no rebuild left half-done
    assert ("user" in _columns(conn, "agent_reports")) == (versions["agents"] >= 3)
    assert ("user" in _columns(conn, "agent_campaigns")) == (versions["agents_campaign"] >= 3)
    assert ("pending_by" in _columns(conn, "memory_lessons")) == (versions["memory"] >= 4)
    assert conn.execute("SELECT count(*) FROM agent_reports").fetchone()[0] == REPORTS
    conn.close()
    return versions


def _check_upgraded(gw: Any) -> None:
    conn = sqlite3.connect(gw.home / "frontdesk.db")
    versions = dict(conn.execute("SELECT component, version FROM schema_versions").fetchall())
    assert (versions["agents"], versions["agents_campaign"], versions["memory"]) == (3, 3, 4)
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    owners = dict(conn.execute("SELECT session, user FROM agent_reports GROUP BY session, user").fetchall())
    assert owners == SESSIONS  # every report its own session's user, none lost to a join
    assert conn.execute("SELECT count(*) FROM agent_reports").fetchone()[0] == REPORTS
    assert sorted(conn.execute("SELECT user, session, turn FROM agent_campaigns").fetchall()) == sorted(
        (u, s, 4) for s, u in SESSIONS.items()
    )
    assert conn.execute("SELECT count(*) FROM agent_turn_counts").fetchone()[0] == len(SESSIONS)
    lessons = conn.execute("SELECT scope_name, pending_by, approved_by FROM memory_lessons ORDER BY id").fetchall()
    assert lessons == [("alice", None, None), ("bob", None, None)]
    conn.close()
    sids = list(SESSIONS)
    for sid, user in SESSIONS.items():  # through the API, as the gateway serves them
        unread = gw.client.request("GET", f"/v1/sessions/{sid}/unread?user={user}")["reports"]
        mine = [n for n in range(1, REPORTS + 1) if sids[n % 3] == sid and n > ACKED[sid]]
        assert [r["seq"] for r in unread] == mine


KILLS = [f"migration_uncommitted:{n}" for n in (1, 2, 3)] + [f"migration_committed:{n}" for n in (1, 2)]


@pytest.mark.parametrize("point", KILLS)
def test_a_gateway_killed_mid_migration_finishes_it_on_restart(gateway_factory: Any, point: str) -> None:
    gw = gateway_factory(env={"FRONTDESK_FAULT": point}, start=False)
    _old_home(gw.home)
    with pytest.raises(RuntimeError, match="did not start"):
        gw.start()
    assert gw.proc is not None and gw.proc.returncode == -9  # killed at the point, not failed
    kind, _, nth = point.partition(":")
    versions = _as_it_lies(gw.home / "frontdesk.db")
    done = [versions["agents"] == 3, versions["agents_campaign"] == 3, versions["memory"] == 4]
    assert sum(done) == int(nth) - (kind == "migration_uncommitted")  # the n-th stayed out until its COMMIT
    gw.env.pop("FRONTDESK_FAULT")
    gw.start()
    _check_upgraded(gw)
    gw.kill9()  # and again: an upgraded database opens as it is
    gw.start()
    _check_upgraded(gw)


def test_a_database_from_a_newer_frontdesk_is_refused_and_left_alone(gateway_factory: Any) -> None:
    gw = gateway_factory(start=False)
    _old_home(gw.home)
    gw.start()
    gw.stop()
    path = gw.home / "frontdesk.db"
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE schema_versions SET version = version + 1 WHERE component = 'agents_campaign'")
    before = list(sqlite3.connect(path).iterdump())
    out = gw.cli("serve")
    assert out.returncode != 0
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "newer frontdesk" in lines[0] and "agents_campaign schema 4" in lines[0], out.stderr
    assert "Traceback" not in out.stdout + out.stderr
    assert list(sqlite3.connect(path).iterdump()) == before  # nothing migrated, nothing written
