"""A project (`[memory.projects]`) is shared by the users it lists: a lesson reaches a project of several users only
when two of them (or an admin) put it there, as for a lab; a project of one user is that user's, and their
promotion holds at once (real users on a facility gateway: bob proposes, carol cannot approve, alice approves;
carol's own project takes her word; fdadmin-user promotes directly)."""

from __future__ import annotations

from typing import Any

from facility_helpers import Facility

FACILITY_ACCESS = """
[memory.projects]
fdshared = ["alice", "bob"]
fdsolo = ["carol"]
"""
APP = "fdprojpromoprobe"  # an application no other test's job runs


def _add(app: str) -> dict[str, Any]:
    body = {"kind": "host_oom", "cause": f"{app} needs more memory", "application": app, "fix": "use --mem 1T"}
    return {"method": "POST", "path": "/v1/memory/lessons", "body": body}


def _promote(lesson_id: int, name: str) -> dict[str, Any]:
    body = {"scope": "project", "name": name}
    return {"method": "POST", "path": f"/v1/memory/lessons/{lesson_id}/promote", "body": body}


def test_a_shared_project_lesson_needs_two_of_its_users(facility: Facility) -> None:
    [[s, mine]] = facility.probe("bob", [_add(APP)])
    assert s == 200, mine
    [[s, proposal]] = facility.probe("bob", [_promote(mine["id"], "fdshared")])
    assert s == 200, proposal
    assert (proposal["scope"], proposal["scope_name"]) == ("project", "fdshared")
    assert proposal["provenance"]["pending_by"] == "bob" and proposal["fact"] is False, proposal
    pid = proposal["id"]
    found = facility.probe(
        "alice",
        [
            {"method": "GET", "path": f"/v1/memory/search?q={APP}"},
            {"method": "GET", "path": f"/v1/memory/lessons/{pid}"},
        ],
    )
    assert [x["id"] for x in found[0][1]["lessons"] if x["scope"] == "project"] == [], found  # not in force
    assert found[1][0] == 200 and "proposed by bob for project fdshared" in found[1][1]["text"], found
    [[s, again]] = facility.probe("bob", [_promote(pid, "fdshared")])  # the same user twice is still one
    assert s == 200 and again["provenance"]["pending_by"] == "bob", again
    [[s, msg]] = facility.probe("carol", [_promote(pid, "fdshared")])  # not of the project: not told it exists
    assert (s, msg) == ("not_found", f"no lesson {pid}")
    [[s, approved]] = facility.probe("alice", [_promote(pid, "fdshared")])  # a second, distinct user approves
    assert s == 200, approved
    assert approved["id"] == pid and approved["provenance"]["pending_by"] is None, approved
    assert approved["provenance"]["approved_by"] == "alice" and approved["fact"] is True, approved
    [[s, listed]] = facility.probe("alice", [{"method": "GET", "path": f"/v1/memory/search?q={APP}"}])
    assert pid in [x["id"] for x in listed["lessons"]], listed


def test_a_one_user_project_and_an_admin_promote_at_once(facility: Facility) -> None:
    [[s, hers]] = facility.probe("carol", [_add(APP + "solo")])
    assert s == 200, hers
    [[s, promoted]] = facility.probe("carol", [_promote(hers["id"], "fdsolo")])
    assert s == 200 and promoted["provenance"]["pending_by"] is None and promoted["fact"] is True, promoted
    [[s, bobs]] = facility.probe("bob", [_add(APP + "admin")])
    assert s == 200, bobs
    [[s, direct]] = facility.probe("fdadmin-user", [_promote(bobs["id"], "fdshared")])
    assert s == 200 and direct["provenance"]["pending_by"] is None, direct
    assert direct["provenance"]["approved_by"] == "fdadmin-user", direct
