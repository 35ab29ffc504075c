"""Labmates read each other's reports, never their log lines (`labmates_read_jobs`, docs/facility.md).

Before, a labmate's `GET /v1/jobs/ID/report`, `POST /v1/wait` and the journal's `job.report` event
(`GET /v1/events`) answered the stored report whole: its stdout and stderr tails, its text (which ends with them)
and the failure's summary (`exit code 3: <the error line>`), although the site's documentation says labmates
never read logs. Now they get the report without any log line
(reports/without_logs.py); the owner and the admins get it whole. Real users (alice and bob share lab1) and a
root facility gateway; each job prints marker lines and fails.
"""

from __future__ import annotations

import json
from typing import Any

from facility_helpers import Facility

FACILITY_ACCESS = "labmates_read_jobs = true\n"
SCRIPT = "echo OUT-MARK-1; echo ERR-MARK-2 >&2; echo 'Traceback: ValueError: ERR-MARK-3' >&2; exit 3"


def _ended(fac: Facility, spec: dict[str, Any]) -> int:
    body = {"spec": spec, "context": {"cwd": "/tmp"}}
    status, rec = fac.probe("alice", [{"method": "POST", "path": "/v1/jobs", "body": body}])[0]
    assert status == 200, rec
    wait = {"method": "POST", "path": "/v1/wait", "body": {"ids": [rec["id"]], "timeout": 60}}
    assert fac.probe("alice", [wait])[0][1]["done"]
    return int(rec["id"])


def _reads(fac: Facility, user: str, job: int) -> list[Any]:
    calls = [
        {"method": "GET", "path": f"/v1/jobs/{job}/report"},
        {"method": "POST", "path": "/v1/wait", "body": {"ids": [job], "timeout": 5}},
    ]
    got = fac.probe(user, calls)
    assert [s for s, _ in got] == [200, 200], got
    return [got[0][1], got[1][1]["reports"][0]]


def test_a_labmate_reads_the_report_without_log_lines(facility: Facility) -> None:
    job = _ended(facility, {"command": ["sh", "-c", SCRIPT]})
    own = _reads(facility, "alice", job)
    assert all("MARK" in json.dumps(r) for r in own)  # the owner: whole
    assert own[0]["stderr_tail"] and "ERR-MARK-2" in own[0]["text"]
    assert "MARK" in json.dumps(_reads(facility, "fdadmin-user", job))  # an admin: whole
    for rep in _reads(facility, "bob", job):  # a labmate: what the job did, no line of its output
        assert "MARK" not in json.dumps(rep), rep
        assert rep["state"] == "FAILED" and rep["exit_code"] == 3 and rep["job_id"] == job
        assert rep["stdout_tail"] == [] and rep["stderr_tail"] == []
        assert rep["text"].startswith(f"frontdesk job {job}") and "exit 3" in rep["text"]
    events = facility.probe("bob", [{"method": "GET", "path": f"/v1/events?job={job}"}])[0]
    assert events[0] == 200 and "job.report" in [e["kind"] for e in events[1]], events
    assert "MARK" not in json.dumps(events[1]), events  # the journal's job.report: the same view
    own_events = facility.probe("alice", [{"method": "GET", "path": f"/v1/events?job={job}"}])[0][1]
    assert "MARK" in json.dumps(own_events)
    # an outsider still reads no report at all
    assert facility.probe("carol", [{"method": "GET", "path": f"/v1/jobs/{job}/report"}])[0][0] == "forbidden"


def test_a_labmate_reads_an_arrays_report_without_log_lines(facility: Facility) -> None:
    job = _ended(facility, {"command": ["sh", "-c", SCRIPT], "array": "0-1"})
    assert "MARK" in json.dumps(_reads(facility, "alice", job)[0])
    for rep in _reads(facility, "bob", job):
        assert "MARK" not in json.dumps(rep), rep
        assert rep["array"]["size"] == 2 and rep["array"]["counts"] == {"FAILED": 2}
