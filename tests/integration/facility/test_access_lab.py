"""The configurable rules: `labmates_read_jobs = true` and `private_jobs = false` on a root facility gateway."""

from __future__ import annotations

from typing import Any

from facility_helpers import Facility

FACILITY_ACCESS = "labmates_read_jobs = true\nprivate_jobs = false\n"
F = "forbidden"


def test_labmates_read_records_and_reports_others_see_records_nobody_else_acts(facility: Facility) -> None:
    answers = facility.probe(
        "alice",
        [
            {
                "method": "POST",
                "path": "/v1/jobs",
                "body": {"spec": {"command": ["echo", "lab-out"]}, "context": {"cwd": "/tmp"}},
            }
        ],
    )
    a = answers[0][1]["id"]
    assert (
        facility.probe("alice", [{"method": "POST", "path": "/v1/wait", "body": {"ids": [a], "timeout": 60}}])[0][0]
        == 200
    )
    calls: list[dict[str, Any]] = [
        {"method": "GET", "path": f"/v1/jobs/{a}"},
        {"method": "GET", "path": f"/v1/jobs/{a}/report"},
        {"method": "GET", "path": f"/v1/jobs/{a}/logs"},
        {"method": "POST", "path": f"/v1/jobs/{a}/cancel", "body": {}},
        {"method": "GET", "path": "/v1/jobs?principal=alice"},
    ]
    got = {user: facility.probe(user, calls) for user in ("bob", "carol")}
    assert [s for s, _ in got["bob"]] == [200, 200, F, F, 200]  # labmate: record and report, never logs or actions
    assert [s for s, _ in got["carol"]] == [200, F, F, F, 200]  # outsider: the record only (no PrivateData)
    assert [j["id"] for j in got["carol"][4][1]] == [a]
    assert got["carol"][2][1] == f"carol may not read the logs of job {a}"
