"""The gateway's guard traces a command copied out of a job's output (issue 19: untrusted program output) and asks
about it; on a facility gateway that index held every user's job output in one file, so bob's submission was asked
about (or refused) because of alice's log, and the answer named her job: an oracle telling bob whether a line is in
alice's output (probe: alice's job prints a command-shaped line, bob submits exactly that command)."""

from __future__ import annotations

from typing import Any

from facility_helpers import Facility

LINE = "fdtaintprobe --resume /tmp/fdtaintprobe-ckpt-4411 --seed 9923"


def _submit(facility: Facility, user: str, command: list[str], session: str | None = None) -> list[Any]:
    context: dict[str, Any] = {"cwd": "/tmp", **({"session": session} if session else {})}
    [answer] = facility.probe(
        user, [{"method": "POST", "path": "/v1/jobs", "body": {"spec": {"command": command}, "context": context}}]
    )
    return list(answer)


def _traced(answer: list[Any]) -> bool:
    """Whether the guard traced the submission to a job's output (an ask notice, or a refusal saying so)."""
    status, body = answer
    text = body if status != 200 else " ".join(n.get("text", "") for n in body.get("notices", []))
    return "copied" in str(text) and "output" in str(text)


def test_another_users_job_output_does_not_trace_my_command(facility: Facility) -> None:
    status, job = _submit(facility, "alice", ["echo", LINE], session="fdtaint-alice-1")
    assert status == 200, job
    [[status, done]] = facility.probe(
        "alice", [{"method": "POST", "path": "/v1/wait", "body": {"ids": [job["id"]], "timeout": 60}}]
    )
    assert status == 200 and done["reports"][0]["state"] == "COMPLETED", done
    copied = LINE.split()
    bobs = _submit(facility, "bob", copied)
    assert not _traced(bobs), bobs  # alice's log says nothing about bob's command
    assert f"job {job['id']}" not in str(bobs), bobs
    assert _traced(_submit(facility, "alice", copied)), "alice's own job output still traces her command"
