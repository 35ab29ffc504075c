"""With `private_jobs = false` everyone lists everyone's job records (name, state, times, as squeue shows them),
never how another's job ended: that is its report's (GET /v1/jobs/ID leaves the end reason out). The dashboard's
"Recent jobs" table showed each listed job's report kind (`missing_import`, `host_oom`...) to every user: how
carol's failed job ended, to alice (probe: carol's job fails with a missing module; alice and bob load the page)."""

from __future__ import annotations

from facility_helpers import Facility
from test_metrics_dashboard_access import _page

FACILITY_ACCESS = "private_jobs = false\n"
NAME = "fdkindprobe"


def test_the_dashboard_lists_anothers_job_without_how_it_ended(facility: Facility) -> None:
    command = ["python3", "-c", "import fdkindprobe_missing_module"]
    body = {"spec": {"name": NAME, "command": command}, "context": {"cwd": "/tmp"}}
    [[status, job]] = facility.probe("carol", [{"method": "POST", "path": "/v1/jobs", "body": body}])
    assert status == 200, job
    [[status, done]] = facility.probe(
        "carol", [{"method": "POST", "path": "/v1/wait", "body": {"ids": [job["id"]], "timeout": 60}}]
    )
    assert status == 200 and done["reports"][0]["classification"]["kind"] == "missing_import", done
    status, own = _page(facility, "carol", "/?part=main")
    assert status == 200 and NAME in own and "missing_import" in own  # carol reads her own job's end
    status, other = _page(facility, "alice", "/?part=main")
    assert status == 200 and NAME in other, other  # listed for everyone, as the site says
    assert "missing_import" not in other, other
