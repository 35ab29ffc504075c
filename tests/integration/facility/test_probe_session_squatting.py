"""Session ids are each user's own namespace: another user using an id first takes nothing from its owner.

A harness's session id is visible to every user (`ps`, the hooks' command lines). Sessions were keyed by id alone
(`agent_sessions.id` PRIMARY KEY), so bob could register alice's id first; then her hooks and her submissions
naming it were refused (`session ... belongs to another user`). Now a session is keyed by (user, id): the user is
the authenticated principal, never a field of a body (agents/schema.py). Every route and plug-in path that takes
a session id is checked here with real Unix users on a root facility gateway: register, hook (wake and
delivery), report arrival, unread, ack, read, turn state, campaign (state, resume, suspend), turn counts (the
submission keys), the job list filtered by session, the journal, and root's view of everyone's sessions.
"""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

from facility_helpers import Facility

from frontdesk.errors import UserError

ADMIN = "fdadmin-user"


def _call(method: str, path: str, body: Any = None) -> dict[str, Any]:
    return {"method": method, "path": path, "body": body}


def _submit(sid: str, command: list[str]) -> dict[str, Any]:
    return _call("POST", "/v1/jobs", {"spec": {"command": command}, "context": {"cwd": "/tmp", "session": sid}})


def _unread_jobs(fac: Facility, user: str, sid: str, want: int) -> list[int]:
    """The session's unread job ids, once `want` of them arrived (a report is stored when the bus delivers it)."""
    deadline = time.monotonic() + 60
    while True:
        status, got = fac.probe(user, [_call("GET", f"/v1/sessions/{sid}/unread")])[0]
        assert status == 200, got
        jobs = [r["job_id"] for r in got["reports"]]
        if len(jobs) >= want or time.monotonic() > deadline:
            return jobs
        time.sleep(0.2)


def test_another_user_registering_my_session_id_first_takes_nothing_from_me(facility: Facility) -> None:
    sid = f"squat-{secrets.token_hex(6)}-alice"
    assert facility.probe("bob", [_call("POST", "/v1/sessions", {"session": sid})])[0][0] == 200
    mine = facility.probe("alice", [_call("POST", "/v1/sessions", {"session": sid}), _submit(sid, ["true"])])
    assert [s for s, _ in mine] == [200, 200], mine
    assert mine[0][1]["user"] == "alice"


def test_the_same_id_is_two_sessions_that_neither_user_sees_changes_or_wakes(facility: Facility) -> None:
    sid = f"squat-{secrets.token_hex(6)}"
    reg = {"session": sid, "harness": "claude-code", "cwd": "/tmp"}
    alice = facility.probe(
        "alice",
        [_call("POST", "/v1/sessions", reg), _submit(sid, ["echo", "alice-only"]), _submit(sid, ["sleep", "300"])],
    )
    assert [s for s, _ in alice] == [200, 200, 200], alice
    done, running = alice[1][1]["id"], alice[2][1]["id"]
    assert _unread_jobs(facility, "alice", sid, 1) == [done]
    since = facility.root_client().health()["last_seq"]

    # bob, naming alice's id on every route that takes one: his own session of that id, never hers
    bob = facility.probe(
        "bob",
        [
            _call("GET", f"/v1/sessions/{sid}"),
            _call("GET", f"/v1/sessions/{sid}/unread"),
            _call("POST", f"/v1/sessions/{sid}/ack", {"jobs": [done]}),
            _call("POST", f"/v1/sessions/{sid}/read", {"jobs": [done]}),
            _call("POST", f"/v1/sessions/{sid}/turn", {"state": "ended"}),
            _call("GET", f"/v1/sessions/{sid}/campaign"),
            _call("POST", f"/v1/sessions/{sid}/campaign/suspend"),
            _call("POST", f"/v1/sessions/{sid}/campaign/resume", {"commit": True}),
            _call("GET", f"/v1/jobs?session={sid}"),
            _call("POST", f"/v1/sessions/{sid}/hook", {"event": "SessionStart", "cwd": "/tmp"}),  # wakes: his own
            _call("POST", f"/v1/sessions/{sid}/hook", {"event": "SessionEnd"}),
        ],
    )
    assert [s for s, _ in bob[:8]] == ["not_found"] * 8, bob
    assert [s for s, _ in bob[8:]] == [200, 200, 200], bob
    assert bob[8][1] == [], bob[8]  # no job of alice's session is listed to him
    start = bob[9][1]
    assert start["session"] == sid and start["delivery"] is None and start["active_jobs"] == [], start
    assert start["unread"] == 0 and "alice-only" not in json.dumps(start), start

    # alice's session is as it was: her unread report, her running job, her turn, her campaign
    status, view = facility.probe("alice", [_call("GET", f"/v1/sessions/{sid}")])[0]
    assert status == 200 and view["user"] == "alice" and view["unread"] == 1, view
    assert view["turn_state"] != "ended" and [j["id"] for j in view["active_jobs"]] == [running], view
    status, campaign = facility.probe("alice", [_call("GET", f"/v1/sessions/{sid}/campaign")])[0]
    assert status == 200 and campaign["user"] == "alice" and campaign["suspended_at"] is None, campaign
    assert campaign["incarnation"] == 0 and {j["id"] for j in campaign["jobs"]} == {done, running}, campaign

    # bob's own job in his session of that id is his: his report arrives in his session, not in hers
    status, his = facility.probe("bob", [_submit(sid, ["echo", "bob-only"])])[0]
    assert status == 200, his
    assert _unread_jobs(facility, "bob", sid, 1) == [his["id"]]
    assert _unread_jobs(facility, "alice", sid, 1) == [done]

    # identical submissions in the same turn: each user's turn counts are its own (submission keys)
    same = _submit(sid, ["echo", "same-spec"])
    a1, b1 = (facility.probe(u, [same])[0] for u in ("alice", "bob"))
    assert a1[0] == 200 and b1[0] == 200 and a1[1]["id"] != b1[1]["id"], (a1, b1)

    # alice's own calls still act on hers: ack and the hook's delivery
    status, acked = facility.probe("alice", [_call("POST", f"/v1/sessions/{sid}/ack", {"jobs": [done]})])[0]
    assert status == 200 and acked["acked"] == [done], acked

    # the journal: bob never sees alice's session's events; alice never sees bob's
    for user, other in (("bob", "alice-only"), ("alice", "bob-only")):
        status, seen = facility.probe(user, [_call("GET", f"/v1/events?since={since}")])[0]
        assert status == 200 and other not in json.dumps(seen), (user, seen)
        assert all(e["principal"] == user for e in seen if e["session"] == sid), (user, seen)

    # root's view of everyone's sessions shows both, each with its user
    status, every = facility.probe(ADMIN, [_call("GET", "/v1/sessions?all=true")])[0]
    assert status == 200
    assert sorted(s["user"] for s in every if s["id"] == sid) == ["alice", "bob"], every  # admins list all too
    rows = [s for s in facility.root_client().request("GET", "/v1/sessions?all=true") if s["id"] == sid]
    assert sorted(s["user"] for s in rows) == ["alice", "bob"], rows
    # root acts on a user's session (suspend, drain) by naming the user; an id two users hold is never guessed
    root = facility.root_client()
    assert root.request("GET", f"/v1/sessions/{sid}?user=alice")["user"] == "alice"
    try:
        root.request("GET", f"/v1/sessions/{sid}")
    except UserError as exc:
        assert "several users (alice, bob)" in str(exc), exc
    else:
        raise AssertionError("root's lookup of an id two users hold picked one")
    status, answer = facility.probe("bob", [_call("GET", f"/v1/sessions/{sid}?user=alice")])[0]
    assert status == "forbidden", answer  # only root and admins name another user
    facility.probe("alice", [_call("POST", f"/v1/jobs/{running}/cancel")])
