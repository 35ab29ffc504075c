"""Labmates read each other's job records and reports, never their log lines (`labmates_read_jobs`, docs/facility.md),
yet the journal gave a labmate the submitter's admission notices: memory's notice quotes the submitter's own lesson,
whose cause is the error line of her earlier failed run (`job.warning`, and `job.submitted`'s `warnings`). Probe:
alice's job prints an error line that is nowhere in its command (reversed by the shell), fails, and she submits it
again; bob (lab1) reads the journal."""

from __future__ import annotations

import json
from typing import Any

from facility_helpers import Facility

FACILITY_ACCESS = "labmates_read_jobs = true\n"
MARK = "kramdnyfckwarn"  # what the job prints; its command holds it reversed only
COMMAND = ["sh", "-c", f"printf 'ValueError: %s\\n' \"$(echo {MARK[::-1]} | rev)\" >&2; exit 3", "fdwarnprobe"]


def _submit(fac: Facility) -> dict[str, Any]:
    body = {"spec": {"command": COMMAND}, "context": {"cwd": "/tmp"}}
    [[status, job]] = fac.probe("alice", [{"method": "POST", "path": "/v1/jobs", "body": body}])
    assert status == 200, job
    [[status, done]] = fac.probe(
        "alice", [{"method": "POST", "path": "/v1/wait", "body": {"ids": [job["id"]], "timeout": 60}}]
    )
    assert status == 200 and done["reports"][0]["state"] == "FAILED", done
    return dict(job)


def test_a_labmate_reads_no_log_line_in_the_journals_notices(facility: Facility) -> None:
    _submit(facility)
    again = _submit(facility)
    assert any(MARK in w for w in again["warnings"]), again  # alice is told of her own failure's line
    since = 0
    [[status, events]] = facility.probe("bob", [{"method": "GET", "path": f"/v1/events?since={since}"}])
    assert status == 200, events
    about = [e for e in events if e.get("job_id") == again["id"]]
    assert {e["kind"] for e in about} >= {"job.submitted", "job.report"}, about  # bob reads her job's events
    leaked = [e for e in events if MARK in json.dumps(e)]
    assert leaked == [], leaked
    [[status, record]] = facility.probe("bob", [{"method": "GET", "path": f"/v1/jobs/{again['id']}"}])
    assert status == 200 and MARK not in json.dumps(record), record
