"""Every route that names an object (a job, an array task, a lesson, a session), walked from the root facility
gateway's own OpenAPI document, called by bob with alice's ids: none answers with alice's object, none changes
it. A route added later with an object in its path fails here until BODIES says how to call it (and thereby
that it was thought about). Session routes name the caller's own session of that id (a 200 is bob's own,
empty one; nothing of alice's in it); with `?user=alice` they are a 403 for a non-admin."""

from __future__ import annotations

import json
import time
from typing import Any

from facility_helpers import Facility

SID = "walk-s1"

BODIES: dict[tuple[str, str], dict[str, Any] | None] = {
    ("GET", "/v1/jobs/{job_id}"): None,
    ("GET", "/v1/jobs/{job_id}/tasks/{index}"): None,
    ("POST", "/v1/jobs/{job_id}/cancel"): None,
    ("GET", "/v1/jobs/{job_id}/report"): None,
    ("GET", "/v1/jobs/{job_id}/logs"): None,
    ("GET", "/v1/memory/lessons/{lesson_id}"): None,
    ("DELETE", "/v1/memory/lessons/{lesson_id}"): None,
    ("POST", "/v1/memory/lessons/{lesson_id}/promote"): {"scope": "lab"},
    ("GET", "/v1/sessions/{sid}"): None,
    ("GET", "/v1/sessions/{sid}/unread"): None,
    ("POST", "/v1/sessions/{sid}/ack"): {"jobs": ["JOB"]},
    ("POST", "/v1/sessions/{sid}/read"): {"jobs": ["JOB"]},
    ("POST", "/v1/sessions/{sid}/turn"): {"state": "idle"},
    ("POST", "/v1/sessions/{sid}/hook"): {"event": "Stop"},
    ("GET", "/v1/sessions/{sid}/campaign"): None,
    ("POST", "/v1/sessions/{sid}/campaign/resume"): {},
    ("POST", "/v1/sessions/{sid}/campaign/suspend"): None,
}
CALLERS_OWN = {("POST", "/v1/fs/{op}")}
"""Not an object: the operator runs as the caller, on the caller's own paths (test_fs_ops_as_user.py)."""
HIDDEN = {("GET", "/ui/jobs/{job_id}"): None}
"""Routes left out of the OpenAPI document that name an object."""
REFUSED = ("forbidden", "not_found")


def _alice(fac: Facility) -> dict[str, Any]:
    """alice's objects: a running array (parent and task 1), an ended job in her session, a lesson."""
    ctx = {"cwd": "/tmp", "env": {}, "session": SID}
    arr = {"spec": {"command": ["sleep", "300"], "workdir": "/tmp", "array": "1-2"}, "context": ctx}
    ended = {"spec": {"command": ["echo", "alice-output"], "workdir": "/tmp"}, "context": ctx}
    lesson = {"kind": "exit_error", "cause": "alice walk cause", "application": "alice-walk-app"}
    got = fac.probe("alice", [
        {"method": "POST", "path": "/v1/sessions", "body": {"session": SID}},
        {"method": "POST", "path": "/v1/jobs", "body": arr},
        {"method": "POST", "path": "/v1/jobs", "body": ended},
        {"method": "POST", "path": "/v1/memory/lessons", "body": lesson},
    ])  # fmt: skip
    assert [s for s, _ in got] == [200] * 4, got
    objs = {"array": got[1][1]["id"], "job": got[2][1]["id"], "lesson": got[3][1]["id"]}
    deadline = time.monotonic() + 60
    while fac.root_client().request("GET", f"/v1/sessions/{SID}?user=alice")["unread"] < 1:
        assert time.monotonic() < deadline
        time.sleep(0.3)
    return objs


def _fill(path: str, objs: dict[str, Any]) -> str:
    job = objs["array"] if "/tasks/" in path or path.endswith("/cancel") else objs["job"]
    filled = path.replace("{job_id}", str(job)).replace("{index}", "1")
    return filled.replace("{lesson_id}", str(objs["lesson"])).replace("{sid}", SID)


def _state(fac: Facility, objs: dict[str, Any]) -> Any:
    root = fac.root_client()
    return (
        root.request("GET", f"/v1/jobs/{objs['array']}")["state"],
        root.request("GET", f"/v1/memory/lessons/{objs['lesson']}")["scope"],
        {k: v for k, v in root.request("GET", f"/v1/sessions/{SID}?user=alice").items() if k != "last_seen"},
    )


def test_bob_reaches_no_object_of_alices_on_any_route(facility: Facility) -> None:
    doc = facility.root_client().request("GET", "/openapi.json")
    routes = {(m.upper(), p) for p, ops in doc["paths"].items() for m in ops if "{" in p} | set(HIDDEN)
    unknown = sorted(routes - set(BODIES) - CALLERS_OWN - set(HIDDEN))
    assert not unknown, f"a route naming an object: add it to BODIES (how bob calls it) or CALLERS_OWN: {unknown}"
    objs = _alice(facility)
    before = _state(facility, objs)
    calls, names = [], []
    for method, path in sorted(routes - CALLERS_OWN):
        body = BODIES.get((method, path), HIDDEN.get((method, path)))
        if body is not None and "jobs" in body:
            body = {**body, "jobs": [objs["job"]]}
        target = _fill(path, objs)
        variants = [target] + ([f"{target}?user=alice"] if "{sid}" in path and not path.endswith("/hook") else [])
        for t in variants:
            calls.append({"method": method, "path": t, "body": body})
            names.append((method, t))
    answers = facility.probe("bob", calls)  # a 200 page of /ui/ would read as a broken JSON answer: not refused
    for (method, target), (status, answer) in zip(names, answers, strict=True):
        text = json.dumps(answer)
        if "?user=alice" in target:
            assert status == "forbidden", (method, target, status, answer)
        elif "/sessions/" in target:  # bob's own session of that id, never alice's
            assert "alice" not in text and 'unread": 1' not in text, (method, target, answer)
        else:
            assert status in REFUSED, (method, target, status, answer)
    assert _state(facility, objs) == before  # nothing of alice's changed: job running, lesson, session unread
    facility.root_client().request("POST", f"/v1/jobs/{objs['array']}/cancel")
