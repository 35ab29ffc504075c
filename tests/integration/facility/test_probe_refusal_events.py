"""A user's own refusal events never tell what the refused answer hid: that another user's session or lesson
exists (the route said 404), or who owns a job the user may not see.

Every refusal is journalled as an `access.denied` event whose principal is the caller (the audit trail), with
the object's `owner`. Before, the caller read those events back (`GET /v1/events`, `--follow`): bob's 404 on
alice's session was followed by an event saying "session S, owner alice", so the 404 hid nothing, and a 403
on a private job named its owner. Now a refusal about another user's object reaches admins only; the audit
is unchanged. Real users, a root facility gateway, HTTP over its Unix socket, the journal and its stream.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from facility_helpers import SYSTEM_PY, Facility, run_as

ADMIN = "fdadmin-user"


def _one(fac: Facility, user: str, method: str, path: str, body: Any = None) -> list[Any]:
    got: list[Any] = fac.probe(user, [{"method": method, "path": path, "body": body}])[0]
    return got


def _alices_objects(fac: Facility) -> tuple[str, int, int]:
    sid = f"fdprobe-{secrets.token_hex(8)}"
    status, _ = _one(fac, "alice", "POST", "/v1/sessions", {"session": sid, "harness": "claude-code", "cwd": "/tmp"})
    assert status == 200
    status, lesson = _one(
        fac,
        "alice",
        "POST",
        "/v1/memory/lessons",
        {"kind": "host_oom", "cause": "fdprobe private lesson", "application": "fdprobe-app"},
    )
    assert status == 200, lesson
    status, job = _one(fac, "alice", "POST", "/v1/jobs", {"spec": {"command": ["true"]}, "context": {"cwd": "/tmp"}})
    assert status == 200, job
    return sid, int(lesson["id"]), int(job["id"])


def test_a_refusal_event_never_reveals_what_the_refusal_hid(facility: Facility) -> None:
    sid, lesson, job = _alices_objects(facility)
    since = facility.root_client().health()["last_seq"]
    got = facility.probe(
        "bob",
        [
            {"method": "GET", "path": f"/v1/sessions/{sid}"},
            {"method": "GET", "path": f"/v1/sessions/{sid}/unread"},
            {"method": "GET", "path": f"/v1/memory/lessons/{lesson}"},
            {"method": "GET", "path": f"/v1/jobs/{job}"},
        ],
    )
    assert [g[0] for g in got] == ["not_found", "not_found", "not_found", "forbidden"], got
    # the audit trail has the refusals, for admins; bob's session path named bob's own session (ids are each
    # user's own: sessions are keyed by (user, id)), which does not exist: nothing of alice's was refused
    status, audit = _one(facility, ADMIN, "GET", f"/v1/events?since={since}&kind=access.denied")
    assert status == 200
    mine = [e for e in audit if e["principal"] == "bob"]
    assert len(mine) == 2 and {e["data"]["owner"] for e in mine} == {"alice"}, mine
    assert not any(sid in json.dumps(e) for e in mine), mine
    # bob's own view of the journal: nothing about alice's objects
    status, seen = _one(facility, "bob", "GET", f"/v1/events?since={since}")
    assert status == 200
    text = json.dumps(seen)
    assert sid not in text and "alice" not in text and f"lesson {lesson}" not in text, seen
    # nor on the live stream (from the same point), which does show bob's own job
    status, _ = _one(facility, "bob", "POST", "/v1/jobs", {"spec": {"command": ["true"]}, "context": {"cwd": "/tmp"}})
    assert status == 200
    code = (
        "import json, threading, time\n"
        "from frontdesk.client import Client\n"
        "out = []\n"
        "def follow():\n"
        f"    for e in Client(timeout=10).events(since={since}, follow=True):\n"
        "        out.append(e)\n"
        "threading.Thread(target=follow, daemon=True).start()\n"
        "time.sleep(3)\n"  # the stream replays the journal from `since` first: what it would show is sent by then
        "print(json.dumps(out))\n"
    )
    r = run_as("bob", [SYSTEM_PY, "-c", code], env=facility.env(FRONTDESK_SOCKET=str(facility.socket)))
    assert r.returncode == 0, r.stderr
    streamed = r.stdout
    assert json.loads(streamed) and sid not in streamed and "alice" not in streamed, streamed
