"""A lesson reaches a whole lab only when two distinct members of that lab (or an admin) put it there: one member's
promotion is a proposal, which the lab's members can read and a second member approves by promoting it again.
Before, one promoter alone made a typed-in lesson (a `fix` of their choosing) every labmate's admission notice
(probe: bob proposes, alice approves, carol and bob again cannot; fdadmin-user promotes directly)."""

from __future__ import annotations

from typing import Any

from facility_helpers import Facility

APP = "fdlabpromoprobe"  # an application no other test's job runs
ADMIN_APP = "fdlabpromoadmin"


def _add(app: str) -> dict[str, Any]:
    body = {"kind": "host_oom", "cause": f"{app} needs more memory", "application": app, "fix": "use --mem 1T"}
    return {"method": "POST", "path": "/v1/memory/lessons", "body": body}


def _promote(lesson_id: int, scope: str = "lab", name: str | None = "lab1") -> dict[str, Any]:
    body = {"scope": scope, **({"name": name} if name else {})}
    return {"method": "POST", "path": f"/v1/memory/lessons/{lesson_id}/promote", "body": body}


def _notices(facility: Facility, user: str, app: str) -> list[str]:
    """The lab lessons' notices `user` is told when submitting a command of `app` (her own failed runs of it are
    lessons in her own scope)."""
    spec = {"command": [f"/tmp/{app}", "--in", "x"]}
    [[status, job]] = facility.probe(
        user, [{"method": "POST", "path": "/v1/jobs", "body": {"spec": spec, "context": {"cwd": "/tmp"}}}]
    )
    assert status == 200, job
    return [n["text"] for n in job.get("notices", []) if n.get("source") == "memory" and n.get("scope") == "lab"]


def test_one_member_only_proposes_a_lab_lesson(facility: Facility) -> None:
    [[s, mine]] = facility.probe("bob", [_add(APP)])
    assert s == 200, mine
    [[s, proposal]] = facility.probe("bob", [_promote(mine["id"])])
    assert s == 200, proposal
    assert (proposal["scope"], proposal["scope_name"]) == ("lab", "lab1")
    assert proposal["provenance"]["pending_by"] == "bob" and proposal["fact"] is False, proposal
    pid = proposal["id"]
    assert _notices(facility, "alice", APP) == []  # one member's word reaches no labmate's agent
    found = facility.probe(
        "alice",
        [
            {"method": "GET", "path": f"/v1/memory/search?q={APP}"},
            {"method": "GET", "path": f"/v1/memory/search?q={APP}&all=true"},
            {"method": "GET", "path": f"/v1/memory/lessons/{pid}"},
        ],
    )
    lab = [[x["id"] for x in answer["lessons"] if x["scope"] == "lab"] for _, answer in found[:2]]
    assert lab == [[], [pid]], found  # not among her lessons, but listed for review (her own job's may be)
    assert found[2][0] == 200 and "awaits a second member" in found[2][1]["text"], found
    again = facility.probe("bob", [_promote(mine["id"]), _promote(pid)])  # the same member twice is still one
    assert [s for s, _ in again] == [200, 200], again
    assert all(x["provenance"]["pending_by"] == "bob" for _, x in again), again
    assert _notices(facility, "alice", APP) == []
    [[s, msg]] = facility.probe("carol", [_promote(pid)])  # not of the lab: not even told it exists
    assert (s, msg) == ("not_found", f"no lesson {pid}")
    [[s, approved]] = facility.probe("alice", [_promote(pid)])  # a second, distinct member approves it
    assert s == 200, approved
    assert approved["id"] == pid and approved["provenance"]["pending_by"] is None, approved
    assert approved["provenance"]["approved_by"] == "alice" and approved["fact"] is True, approved
    assert any(APP in text for text in _notices(facility, "alice", APP))


def test_a_second_members_own_copy_does_not_approve_unseen_words(facility: Facility) -> None:
    """bob's proposal holds a key (signature, template, application); alice promoting her own lesson onto it would
    put bob's words (his fix) in force without her having read them: refused, naming the proposal to review."""
    app = APP + "2"
    [[s, bobs]] = facility.probe("bob", [_add(app)])
    [[s2, proposal]] = facility.probe("bob", [_promote(bobs["id"])])
    assert (s, s2) == (200, 200), (bobs, proposal)
    [[s, hers]] = facility.probe("alice", [_add(app)])
    assert s == 200, hers
    [[s, msg]] = facility.probe("alice", [_promote(hers["id"])])
    assert s == "conflict" and f"lesson {proposal['id']}" in msg, (s, msg)
    assert _notices(facility, "alice", app) == []


def test_an_admin_puts_a_lesson_in_a_lab_at_once(facility: Facility) -> None:
    [[s, bobs]] = facility.probe("bob", [_add(ADMIN_APP)])
    [[s2, proposal]] = facility.probe("bob", [_promote(bobs["id"])])
    assert (s, s2) == (200, 200), (bobs, proposal)
    [[s, approved]] = facility.probe("fdadmin-user", [_promote(proposal["id"])])  # not of lab1, but an admin
    assert s == 200 and approved["provenance"]["approved_by"] == "fdadmin-user", approved
    assert approved["provenance"]["pending_by"] is None
    assert any(ADMIN_APP in text for text in _notices(facility, "alice", ADMIN_APP))
