"""An admin's listing that shows other users' objects is journalled: one `access.admin` event per request naming
the objects (jobs through /v1/jobs and /v1/queue, sessions through /v1/sessions?all=true). A user's listing of
their own objects, and an admin's of their own, leave nothing. Real users alice, bob, fdadmin-user; root."""

from __future__ import annotations

import secrets
from typing import Any

import pytest
from facility_helpers import Facility

ADMIN = "fdadmin-user"
SLEEP = {"spec": {"command": ["sleep", "300"]}, "context": {"cwd": "/tmp"}}


@pytest.fixture(scope="module")
def objects(facility: Facility) -> dict[str, Any]:
    """alice: two running jobs and a session; bob: one running job; the admin: one job of their own."""
    sid = f"fac-audit-{secrets.token_hex(4)}"
    session = {"method": "POST", "path": "/v1/sessions", "body": {"session": sid, "harness": "claude-code"}}
    alice = facility.probe("alice", [session, *[{"method": "POST", "path": "/v1/jobs", "body": SLEEP}] * 2])
    bob = facility.probe("bob", [{"method": "POST", "path": "/v1/jobs", "body": SLEEP}])
    admin = facility.probe(ADMIN, [{"method": "POST", "path": "/v1/jobs", "body": SLEEP}])
    assert [a[0] for a in alice + bob + admin] == [200] * 5, (alice, bob, admin)
    return {
        "alice": sorted(a[1]["id"] for a in alice[1:]),
        "bob": [bob[0][1]["id"]],
        "admin": [admin[0][1]["id"]],
        "session": sid,
    }


def _admin_events(fac: Facility, since: int) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = fac.root_client().request("GET", f"/v1/events?since={since}&kind=access.admin")
    return found


def test_an_admin_listing_others_jobs_leaves_one_event_naming_them(facility: Facility, objects: dict[str, Any]) -> None:
    root = facility.root_client()
    since = root.health()["last_seq"]
    (status, listed), (qstatus, queue) = facility.probe(
        ADMIN, [{"method": "GET", "path": "/v1/jobs"}, {"method": "GET", "path": "/v1/queue"}]
    )
    assert status == qstatus == 200
    others = {str(i) for i in objects["alice"] + objects["bob"]}
    shown = {str(j["id"]) for j in listed}
    assert others | {str(objects["admin"][0])} <= shown
    events = _admin_events(facility, since)
    assert len(events) == 2, events  # one per request, not one per job
    for event, what in zip(events, (listed, queue["jobs"]), strict=True):
        data = event["data"]
        assert event["principal"] == ADMIN and data["action"] == "list" and data["target"] == "jobs"
        assert data["via"] == "unix" and data["count"] == len(data["ids"])
        expected = {str(j["id"]) for j in what if j["principal"] != ADMIN}
        assert set(data["ids"]) == expected and others <= expected
        assert str(objects["admin"][0]) not in data["ids"]  # the admin's own job is no audit matter
        assert set(data["owners"]) == {j["principal"] for j in what if j["principal"] != ADMIN}


def test_owners_listing_their_own_jobs_leave_nothing(facility: Facility, objects: dict[str, Any]) -> None:
    since = facility.root_client().health()["last_seq"]
    for user in ("alice", "bob"):
        (status, listed), (qstatus, _) = facility.probe(
            user, [{"method": "GET", "path": "/v1/jobs"}, {"method": "GET", "path": "/v1/queue"}]
        )
        assert status == qstatus == 200 and {j["principal"] for j in listed} == {user}
    admin_own = facility.probe(ADMIN, [{"method": "GET", "path": f"/v1/jobs?principal={ADMIN}"}])[0]
    assert admin_own[0] == 200 and {j["id"] for j in admin_own[1]} == set(objects["admin"])
    assert _admin_events(facility, since) == []


def test_root_listing_every_session_leaves_one_event_naming_others_sessions(
    facility: Facility, objects: dict[str, Any]
) -> None:
    root = facility.root_client()
    since = root.health()["last_seq"]
    sessions = root.request("GET", "/v1/sessions?all=true")
    assert objects["session"] in {s["id"] for s in sessions}
    events = _admin_events(facility, since)
    assert [(e["principal"], e["data"]["target"]) for e in events] == [("root", "sessions")]
    others = {s["id"] for s in sessions if s["user"] != "root"}
    assert set(events[0]["data"]["ids"]) == others and "alice" in events[0]["data"]["owners"]
    since = root.health()["last_seq"]
    alice = facility.probe("alice", [{"method": "GET", "path": "/v1/sessions?all=true"}])[0]
    assert alice[0] == 200 and {s["user"] for s in alice[1]} == {"alice"}  # all=true is root's only
    assert _admin_events(facility, since) == []


def test_memory_search_is_scoped_for_admins_too_and_a_read_by_id_is_audited(facility: Facility) -> None:
    word = f"fdaudit{secrets.token_hex(3)}"
    body = {"kind": "host_oom", "cause": f"{word} needs 64G", "template": "python train.py", "fix": "ask for 64G"}
    status, lesson = facility.probe("alice", [{"method": "POST", "path": "/v1/memory/lessons", "body": body}])[0]
    assert status == 200, lesson
    since = facility.root_client().health()["last_seq"]
    (s1, mine), (s2, admins), (s3, read) = [
        *facility.probe("alice", [{"method": "GET", "path": f"/v1/memory/search?q={word}"}]),
        *facility.probe(
            ADMIN,
            [
                {"method": "GET", "path": f"/v1/memory/search?q={word}"},
                {"method": "GET", "path": f"/v1/memory/lessons/{lesson['id']}"},
            ],
        ),
    ]
    assert s1 == s2 == s3 == 200
    assert [x["id"] for x in mine["lessons"]] == [lesson["id"]]
    assert admins["lessons"] == []  # a search lists the caller's own scopes: no admin view of others' to audit
    assert read["id"] == lesson["id"]
    events = _admin_events(facility, since)
    assert [(e["principal"], e["data"]["action"], e["data"]["target"]) for e in events] == [
        (ADMIN, "read", f"lesson {lesson['id']}")
    ]
