"""An id in a request is ASCII digits, or it is refused: `12_3` (Slurm's array task 3 of job 12) was read as
job 123 (Python's and pydantic's int() take `_` as a digit separator), so a cancel, a wait, a log read or a
lesson's removal named in Slurm's spelling hit another object: an admin's cancel of task `1_0` cancelled
alice's job 10; a user's own `forget 1_2` forgot their lesson 12. Real root gateway, real users."""

from __future__ import annotations

from typing import Any

from facility_helpers import Facility

ADMIN = "fdadmin-user"


def _sleeper() -> dict[str, Any]:
    spec = {"command": ["sleep", "300"], "workdir": "/tmp", "resources": {"cpus": 1}}
    return {"method": "POST", "path": "/v1/jobs", "body": {"spec": spec, "context": {"cwd": "/tmp", "env": {}}}}


def _slurm_spelling(job_id: int) -> str:
    """`12_3` for job 123: how Slurm writes task 3 of array 12."""
    text = str(job_id)
    return f"{text[:-1]}_{text[-1]}"


def test_an_id_with_an_underscore_names_no_other_job(facility: Facility) -> None:
    made = facility.probe("alice", [_sleeper() for _ in range(10)])
    ids = [rec["id"] for status, rec in made if status == 200]
    assert len(ids) == 10, made
    target = max(ids)  # >= 10: it has a Slurm spelling that is not an id
    form = _slurm_spelling(target)
    try:
        calls = [
            {"method": "POST", "path": f"/v1/jobs/{form}/cancel"},
            {"method": "GET", "path": f"/v1/jobs/{form}"},
            {"method": "GET", "path": f"/v1/jobs/{form}/logs"},
            {"method": "POST", "path": "/v1/wait", "body": {"ids": [form], "timeout": 0}},
        ]
        for who in (ADMIN, "alice"):
            for (status, answer), call in zip(facility.probe(who, calls), calls, strict=True):
                assert status == "bad_input", (who, call, answer)  # before: job {target} (the admin: alice's)
                assert "digits" in answer, answer
        assert facility.root_client().request("GET", f"/v1/jobs/{target}")["state"] in ("PENDING", "RUNNING")
        for bad in ("+1", "1.0", " 1", "0x1", "١"):  # other spellings are refused too, one line each
            status, answer = facility.probe("alice", [{"method": "GET", "path": f"/v1/jobs/{bad}"}])[0]
            assert status == "bad_input", (bad, answer)
        status, rec = facility.probe("alice", [{"method": "GET", "path": f"/v1/jobs/{target}"}])[0]
        assert status == 200 and rec["id"] == target  # a plain id works as before
    finally:
        for job_id in ids:
            if facility.root_client().request("GET", f"/v1/jobs/{job_id}").get("ended_at") is None:
                facility.root_client().request("POST", f"/v1/jobs/{job_id}/cancel")


def _lesson(n: int) -> dict[str, Any]:
    body = {"kind": "exit_error", "cause": f"probe cause {n}", "application": f"probe-app-{n}"}
    return {"method": "POST", "path": "/v1/memory/lessons", "body": body}


def test_a_lesson_id_with_an_underscore_forgets_nothing(facility: Facility) -> None:
    made = facility.probe("alice", [_lesson(n) for n in range(12)])
    ids = [rec["id"] for status, rec in made if status == 200]
    assert len(ids) == 12, made
    target = max(ids)
    form = _slurm_spelling(target)
    status, answer = facility.probe("alice", [{"method": "DELETE", "path": f"/v1/memory/lessons/{form}"}])[0]
    assert status == "bad_input" and "digits" in answer, answer  # before: lesson {target} forgotten
    status, lesson = facility.probe("alice", [{"method": "GET", "path": f"/v1/memory/lessons/{target}"}])[0]
    assert status == 200 and lesson["id"] == target, lesson
