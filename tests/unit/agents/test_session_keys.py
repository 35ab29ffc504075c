"""Sessions are keyed by (user, id): the store keeps two users' same id apart, and an old database migrates whole.

The migration is the agents component's third and the campaigns component's third (agents/schema.py,
agents/campaign_store.py): each table rebuilt in one transaction with foreign keys off (store/db.py). The
old database here is made by the released migrations themselves, filled with rows of every table, then
opened by the current code.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

from frontdesk.agents.campaign_store import MIGRATIONS as CAMPAIGN_MIGRATIONS
from frontdesk.agents.campaign_store import CampaignStore
from frontdesk.agents.channels.inbox import InboxSecrets
from frontdesk.agents.model import TurnState
from frontdesk.agents.schema import MIGRATIONS
from frontdesk.agents.store import SessionStore
from frontdesk.events.models import Event, EventKind
from frontdesk.store.db import _core_migrations, apply_schema, open_db
from frontdesk.store.jobs import JobStore
from frontdesk.store.retention import Retention, prune


def _old_db(path: Path) -> None:
    """A database as the last release left it: sessions keyed by id, two users' sessions with rows everywhere."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA foreign_keys=ON")
    apply_schema(conn, "core", _core_migrations())
    apply_schema(conn, "agents", MIGRATIONS[:2])
    apply_schema(conn, "agents_campaign", CAMPAIGN_MIGRATIONS[:2])
    for sid, user, ack in (("s-alice", "alice", 2), ("s-bob", "bob", 0)):
        conn.execute(
            "INSERT INTO agent_sessions(id, user, harness, cwd, turn_state, ack_seq, registered_at, last_seen_at) "
            "VALUES(?, ?, 'claude-code', '/w', 'idle', ?, 1, 2)",
            (sid, user, ack),
        )
    reports = [(1, "s-alice", 10), (2, "s-alice", 11), (3, "s-bob", 12), (7, "s-alice", 13)]
    for seq, sid, job in reports:
        conn.execute(
            "INSERT INTO agent_reports(seq, session, job_id, state, text, arrived_at) "
            "VALUES(?, ?, ?, 'FAILED', 't', 1)",
            (seq, sid, job),
        )
    conn.execute("DELETE FROM agent_reports WHERE seq=7")  # the counter stays at 7: no seq is ever reused
    conn.execute("INSERT INTO agent_campaigns(session, turn, resume_handle, updated_at) VALUES('s-alice', 3, 'h', 1)")
    conn.execute(
        "INSERT INTO agent_turn_counts(session, incarnation, turn, spec_hash, n) VALUES('s-alice', 0, 3, 'abc', 2)"
    )
    conn.close()


def test_an_old_database_migrates_with_every_row_and_its_owner(tmp_path: Path) -> None:
    path = tmp_path / "frontdesk.db"
    _old_db(path)
    conn = open_db(path)
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1  # on again after the rebuild
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    sessions = {(r["user"], r["id"], r["ack_seq"]) for r in conn.execute("SELECT * FROM agent_sessions")}
    assert sessions == {("alice", "s-alice", 2), ("bob", "s-bob", 0)}
    reports = [tuple(r) for r in conn.execute("SELECT seq, user, session, job_id FROM agent_reports ORDER BY seq")]
    assert reports == [(1, "alice", "s-alice", 10), (2, "alice", "s-alice", 11), (3, "bob", "s-bob", 12)]
    campaign = conn.execute("SELECT user, session, turn, resume_handle FROM agent_campaigns").fetchall()
    assert [tuple(r) for r in campaign] == [("alice", "s-alice", 3, "h")]
    counts = conn.execute("SELECT user, session, turn, spec_hash, n FROM agent_turn_counts").fetchall()
    assert [tuple(r) for r in counts] == [("alice", "s-alice", 3, "abc", 2)]
    store = SessionStore(conn)
    assert [r.job_id for r in store.unread(("bob", "s-bob"))] == [12]
    assert store.unread(("alice", "s-alice")) == []  # her cursor (2) came along
    seq = store.add_report(("alice", "s-alice"), 14, None, "COMPLETED", "t", 3)
    assert seq == 8  # after the old counter, never a seq at or under a cursor
    assert CampaignStore(conn).mark(("alice", "s-alice"), 4).turn == 3
    conn.close()
    again = open_db(path)  # applied once: opening again changes nothing
    assert again.execute("SELECT count(*) FROM agent_reports").fetchone()[0] == 4
    again.close()


def test_a_failed_migration_leaves_the_old_schema_and_its_version(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    conn.execute("PRAGMA foreign_keys=ON")
    apply_schema(conn, "t", ["CREATE TABLE a (x);"])
    broken = ["CREATE TABLE a (x);", "CREATE TABLE b (x); INSERT INTO nowhere VALUES (1);"]
    try:
        apply_schema(conn, "t", broken)
    except sqlite3.OperationalError:
        pass
    else:
        raise AssertionError("the broken migration was applied")
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "b" not in names  # its first statement rolled back with it
    assert conn.execute("SELECT version FROM schema_versions WHERE component='t'").fetchone()[0] == 1
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1 and not conn.in_transaction


def test_two_users_hold_the_same_id_apart(tmp_path: Path) -> None:
    conn = open_db(tmp_path / "frontdesk.db")
    store = SessionStore(conn)
    bob, created = store.upsert("bob", "same", 1.0, "codex", "/bob")
    assert created and bob.user == "bob"
    alice, created = store.upsert("alice", "same", 2.0, "claude-code", "/alice")
    assert created and alice.user == "alice" and alice.cwd == "/alice"
    assert store.get("bob", "same") == bob  # untouched by hers
    store.set_turn(alice.key, TurnState.IDLE, 3.0)
    store.add_report(alice.key, 1, "a", "COMPLETED", "hers", 3.0)
    store.add_report(bob.key, 1, "b", "FAILED", "his", 3.0)  # the same job id in his session is his own row
    assert [r.text for r in store.unread(alice.key)] == ["hers"]
    assert [r.text for r in store.unread(bob.key)] == ["his"]
    assert store.ack(bob.key, 10**9, "hooks", 4.0) == [1]
    assert [r.text for r in store.unread(alice.key)] == ["hers"]  # his ack moved his cursor only
    got = store.get("bob", "same")
    assert got is not None and got.turn_state is TurnState.UNKNOWN and got.ack_seq == 10**9
    assert store.unread_counts([alice.key, bob.key]) == {alice.key: 1, bob.key: 0}
    assert store.sessions_with_unread() == [alice.key]
    assert {(s.user, s.id) for s in store.list_sessions(None)} == {alice.key, bob.key}


def test_the_journal_keeps_a_sessions_events_by_its_user_and_id(tmp_path: Path) -> None:
    """alice's unread report keeps her session's events; bob's events naming the same id go with their age."""
    conn = open_db(tmp_path / "frontdesk.db")
    store, jobs = SessionStore(conn), JobStore(conn)
    alice, _ = store.upsert("alice", "same", 1.0)
    store.upsert("bob", "same", 1.0)
    store.add_report(alice.key, 1, None, "COMPLETED", "t", 1.0)  # unread
    for user in ("alice", "bob"):
        jobs.append_event(Event(EventKind.SESSION_WAKE, session="same", principal=user, ts=1.0, data={}))
    assert prune(conn, Retention(max_age_s=60, max_events=0), now=10_000.0) == 1
    left = [r[0] for r in conn.execute("SELECT principal FROM events WHERE kind='session.wake'")]
    assert left == ["alice"]


def test_inbox_secrets_are_kept_per_user_and_id_and_an_old_record_is_read_by_its_owner_only(tmp_path: Path) -> None:
    secrets = InboxSecrets(tmp_path / "inbox")
    secrets.root.mkdir(mode=0o700)
    legacy = secrets.root / (hashlib.sha256(b"same").hexdigest()[:40] + ".json")  # before (user, id)
    legacy.write_text(json.dumps({"session": "same", "user": "alice", "socket": "/a", "token": "t"}))
    assert (secrets.get("alice", "same") or {}).get("socket") == "/a"
    assert secrets.get("bob", "same") is None
    secrets.put("bob", "same", {"socket": "/b", "token": "u"})
    secrets.put("alice", "same", {"socket": "/a2", "token": "v"})
    assert (secrets.get("bob", "same") or {}).get("socket") == "/b"
    assert (secrets.get("alice", "same") or {}).get("socket") == "/a2"
