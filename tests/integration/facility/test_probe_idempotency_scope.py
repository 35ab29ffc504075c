"""Idempotency keys are each user's own: one user's key never finds, blocks or reveals another user's job.

Before, the key was one namespace for the whole facility: bob submitting the key alice used got 403 "bob may
not reuse the idempotency key of job N" (telling him alice used it, and her job's id), and a key bob used
first (`train-gpt-v1`, or a key he planted ahead of her) refused alice's own submission for good. Real users,
a root facility gateway, HTTP over its Unix socket and the real CLI; a batch and a database made before the
change (migration 8) too.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
from typing import Any

from facility_helpers import Facility

from frontdesk.store.db import open_db
from frontdesk.store.jobs import JobStore


def _submit(fac: Facility, user: str, body: dict[str, Any], path: str = "/v1/jobs") -> list[Any]:
    got: list[Any] = fac.probe(user, [{"method": "POST", "path": path, "body": body}])[0]
    return got


def _body(key: str) -> dict[str, Any]:
    return {"spec": {"command": ["true"], "idempotency_key": key}, "context": {"cwd": "/tmp"}}


def _denials(fac: Facility, since: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = fac.root_client().request("GET", f"/v1/events?since={since}&kind=access.denied")
    return [e for e in events if "idempotency" in json.dumps(e)]


def test_the_same_key_of_two_users_is_two_jobs(facility: Facility) -> None:
    key = f"train-gpt-v1-{secrets.token_hex(4)}"
    since = facility.root_client().health()["last_seq"]
    status, alice = _submit(facility, "alice", _body(key))
    assert status == 200 and alice["principal"] == "alice" and not alice.get("duplicate"), alice
    status, bob = _submit(facility, "bob", _body(key))
    assert status == 200, bob  # was 403 naming alice's job
    assert bob["principal"] == "bob" and bob["id"] != alice["id"] and not bob.get("duplicate"), bob
    # each one's key still finds that one's own job, shown as given
    for user, first in (("alice", alice), ("bob", bob)):
        status, again = _submit(facility, user, _body(key))
        assert status == 200 and again["duplicate"] and again["id"] == first["id"], again
        assert again["spec"]["idempotency_key"] == key and "\\u001f" not in json.dumps(again), again
    assert _denials(facility, since) == []


def test_a_key_planted_first_by_another_user_does_not_block_the_owner(facility: Facility) -> None:
    key = f"session:planted-{secrets.token_hex(4)}:turn1:0123456789abcdef:0"
    status, planted = _submit(facility, "carol", _body(key))
    assert status == 200, planted
    status, alice = _submit(facility, "alice", _body(key))
    assert status == 200 and alice["principal"] == "alice" and not alice.get("duplicate"), alice
    # through the real CLI too
    r = facility.cli("alice", "run", "--json", "--idempotency-key", key, "--", "true")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["id"] == alice["id"]


def test_a_batch_with_another_users_key_is_the_callers_own_jobs(facility: Facility) -> None:
    key = f"b-{secrets.token_hex(4)}"
    status, alice = _submit(facility, "alice", _body(key))
    assert status == 200, alice
    batch = {"jobs": [{"spec": {"command": ["true"], "idempotency_key": key}}, {"spec": {"command": ["true"]}}]}
    status, got = _submit(facility, "bob", {**batch, "context": {"cwd": "/tmp"}}, "/v1/jobs/batch")
    assert status == 200, got  # was 403 after bob's second job had been stored anyway
    assert [j["principal"] for j in got["jobs"]] == ["bob", "bob"], got
    assert alice["id"] not in [j["id"] for j in got["jobs"]]


def test_keys_stored_before_the_change_stay_their_owners(tmp_path: Any) -> None:
    """A database from before migration 8: its keys move into their owners' namespaces."""
    db = tmp_path / "old.db"
    conn = open_db(db)
    rows = [("alice", "k-old"), ("bob", "k-other")]
    for principal, key in rows:
        conn.execute(
            "INSERT INTO jobs(spec, state, backend, principal, idempotency_key, submitted_at) "
            "VALUES('{}', 'COMPLETED', 'local', ?, ?, 0)",
            (principal, key),
        )
    conn.execute("UPDATE schema_versions SET version = 7 WHERE component = 'core'")  # as an old gateway left it
    conn.close()
    conn = sqlite3.connect(db)
    conn.execute("UPDATE jobs SET idempotency_key = CASE principal WHEN 'alice' THEN 'k-old' ELSE 'k-other' END")
    conn.commit()
    conn.close()
    store = JobStore(open_db(db))
    found = store.by_idempotency_key("alice", "k-old")
    assert found is not None and found.principal == "alice" and found.idempotency_key == "k-old"
    assert store.by_idempotency_key("bob", "k-old") is None
    assert store.by_idempotency_key("bob", "k-other") is not None
