"""A failed TCP authentication (a revoked or bad token, no credential) is journalled without the secret, and a
flood of them grows the journal by one event per source per interval (with a count), flushed when the gateway
stops. A root facility gateway; the revoked token is the real user alice's."""

from __future__ import annotations

import secrets
import signal
import sqlite3
from typing import Any

import httpx
from facility_helpers import Facility

from frontdesk.identity import hash_token

FACILITY_ACCESS = "auth_failure_interval = 3600  # the whole flood falls in one interval\n"


def _auth_events(rows: list[tuple[str, str]]) -> list[dict[str, Any]]:
    import json

    return [json.loads(data) for kind, data in rows if kind == "access.unauthenticated"]


def test_a_flood_of_bad_tokens_is_one_event_per_interval_with_its_count_and_no_secret(facility: Facility) -> None:
    root = facility.root_client()
    token = facility.tokens["alice"]
    listed = root.request("GET", "/v1/tokens?principal=alice")["tokens"]
    alice_id = hash_token(token)[7:19]
    assert [t["id"] for t in listed] == [alice_id]  # the id the journal will name is the one `token list` shows
    with httpx.Client(base_url=facility.url, timeout=30) as http:
        assert http.get("/v1/jobs", headers={"Authorization": f"Bearer {token}"}).status_code == 200
        root.request("POST", "/v1/tokens/revoke", {"principal": "alice"})
        since = root.health()["last_seq"]
        bogus = secrets.token_urlsafe(30)
        calls = [{"Authorization": f"Bearer {token}"}] * 200 + [{"Authorization": f"Bearer {bogus}"}] * 50
        calls += [{}] * 30 + [{"Authorization": "MUNGE not-a-credential"}] * 20
        statuses = {http.get("/v1/jobs", headers=h).status_code for h in calls}
    assert statuses == {401}
    during = [e for e in root.request("GET", f"/v1/events?since={since}") if e["kind"] == "access.unauthenticated"]
    assert len(during) == 1, during  # 300 failures, one event
    assert during[0]["principal"] is None
    data = during[0]["data"]
    assert (data["source"], data["count"], data["via"], data["token_ids"]) == ("127.0.0.1", 1, "bearer", [alice_id])
    last = root.health()["last_seq"]

    assert facility.proc is not None
    facility.proc.send_signal(signal.SIGTERM)  # a stopping gateway journals what it counted
    assert facility.proc.wait(timeout=30) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal once stopped
    db = facility.dir / "home" / "frontdesk.db"
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT kind, data FROM events WHERE seq > ? ORDER BY seq", (since,)).fetchall()
        after = conn.execute("SELECT count(*) FROM events WHERE seq > ?", (last,)).fetchone()[0]
    found = _auth_events(rows)
    assert after == 1 and len(found) == 2
    assert found[1]["source"] == "127.0.0.1" and sum(e["count"] for e in found) == 300
    assert set(found[1]["token_ids"]) == {alice_id, hash_token(bogus)[7:19]}
    for secret in (token, bogus):  # never the token: not in the database, its WAL, the log
        for path in [*facility.dir.joinpath("home").glob("frontdesk.db*"), facility.dir / "gateway.log"]:
            assert secret.encode() not in path.read_bytes(), path
