"""A job may depend only on jobs its submitter may see, however the dependency is spelled: `12_3` (task 3 of array
12, as sbatch's afterok:12_3 writes it) resolved to another user's task without the check the plain id gets, so
bob's job could wait on alice's private array task (its outcome told by whether his job ran) and learn that it
exists (probe: alice's array, bob's `depends_on` in each spelling, the batch endpoint too)."""

from __future__ import annotations

from typing import Any

from facility_helpers import Facility


def _job(depends_on: list[Any]) -> dict[str, Any]:
    return {"spec": {"command": ["true"], "depends_on": depends_on}, "context": {"cwd": "/tmp"}}


def test_a_task_of_another_users_array_is_no_dependency_of_mine(facility: Facility) -> None:
    spec = {"command": ["sleep", "30"], "array": "0-3"}
    [[status, array]] = facility.probe(
        "alice", [{"method": "POST", "path": "/v1/jobs", "body": {"spec": spec, "context": {"cwd": "/tmp"}}}]
    )
    assert status == 200, array
    aid = array["id"]
    [[status, mine]] = facility.probe("alice", [{"method": "POST", "path": "/v1/jobs", "body": _job([f"{aid}_2"])}])
    assert status == 200, mine  # alice waits on her own task so
    calls = [
        {"method": "POST", "path": "/v1/jobs", "body": _job([aid])},
        {"method": "POST", "path": "/v1/jobs", "body": _job([f"{aid}_2"])},
        {"method": "POST", "path": "/v1/jobs/batch", "body": {"jobs": [{"spec": _job([f"{aid}_1"])["spec"]}]}},
    ]
    answers = facility.probe("bob", calls)
    assert [s for s, _ in answers] == ["forbidden"] * 3, answers
    assert answers[1][1].startswith("bob may not depend on job "), answers
    facility.probe("alice", [{"method": "POST", "path": f"/v1/jobs/{aid}/cancel"}])
