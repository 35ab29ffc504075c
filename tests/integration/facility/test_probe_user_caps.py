"""One user cannot fill the facility gateway's state with jobs or sessions (`[limits]`, core/quotas.py).

Before, nothing capped a user's stored jobs, arrays (10,000 tasks each, any number of them) or agent sessions:
one user could fill the state disk and then every user's submissions failed (507). Now each principal has a cap
on unfinished jobs (array tasks and parents counted) and on sessions; past it a submission or a new session gets
one line (429, the limit named) and nothing is stored; the admins are exempt; jobs that end make room again.
Real users and a root facility gateway; every job is a `sleep`, cancelled at the end.
"""

from __future__ import annotations

import time
from typing import Any

from facility_helpers import Facility

FACILITY_ACCESS = "\n[limits]\njobs_per_user = 30\nsessions_per_user = 3\n"


def _job(array: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"command": ["sleep", "600"], **({"array": array} if array else {})}
    return {"method": "POST", "path": "/v1/jobs", "body": {"spec": spec, "context": {"cwd": "/tmp"}}}


def _mine(fac: Facility, user: str) -> list[dict[str, Any]]:
    status, rows = fac.probe(user, [{"method": "GET", "path": f"/v1/jobs?principal={user}&limit=500"}])[0]
    assert status == 200, rows
    return list(rows)


def _cancel(fac: Facility, user: str, ids: list[int]) -> None:
    calls = [{"method": "POST", "path": f"/v1/jobs/{i}/cancel", "body": {}} for i in ids]
    assert all(s == 200 for s, _ in fac.probe(user, calls))


def test_a_users_unfinished_jobs_are_capped_admins_exempt(facility: Facility) -> None:
    got = facility.probe("alice", [_job("0-24%1"), *[_job() for _ in range(4)], _job(), _job("0-9")])
    assert [s for s, _ in got[:5]] == [200] * 5, got  # 26 rows (the parent and 25 tasks), then 4 jobs: 30
    assert [s for s, _ in got[5:]] == ["rate_limited"] * 2, got
    assert "[limits].jobs_per_user" in got[5][1] and "30" in got[5][1] and "\n" not in got[5][1]
    ids = [a["id"] for _, a in got[:5]]
    before = _mine(facility, "alice")
    assert sorted(r["id"] for r in before if r.get("array_id") is None) == sorted(ids)  # nothing more stored
    # another user is not touched; an admin is exempt
    assert facility.probe("bob", [_job()])[0][0] == 200
    admin = facility.probe("fdadmin-user", [_job("0-39%1")])
    assert admin[0][0] == 200, admin
    # jobs that end make room again (a principal refused at the cap is recounted at most once a second)
    _cancel(facility, "alice", ids[:1])
    for _ in range(20):
        again = facility.probe("alice", [_job()])
        if again[0][0] != "rate_limited":
            break
        time.sleep(0.5)
    assert again[0][0] == 200, again
    _cancel(facility, "alice", [*ids[1:], again[0][1]["id"]])
    _cancel(facility, "fdadmin-user", [admin[0][1]["id"]])
    bob = [r["id"] for r in _mine(facility, "bob")]
    _cancel(facility, "bob", bob)


def test_a_users_sessions_are_capped(facility: Facility) -> None:
    reg = [{"method": "POST", "path": "/v1/sessions", "body": {"session": f"cap-carol-{i}"}} for i in range(5)]
    got = facility.probe("carol", reg)
    assert [s for s, _ in got] == [200, 200, 200, "rate_limited", "rate_limited"], got
    assert "[limits].sessions_per_user" in got[3][1]
    listed = facility.probe("carol", [{"method": "GET", "path": "/v1/sessions"}])[0][1]
    assert sorted(s["id"] for s in listed) == [f"cap-carol-{i}" for i in range(3)]
    assert facility.probe("carol", reg[:1])[0][0] == 200  # one of hers again: a refresh, not a new one
    # a job naming a new session is refused whole (nothing stored), another user's sessions are not touched
    sub = _job()
    sub["body"]["context"]["session"] = "cap-carol-new"
    refused = facility.probe("carol", [sub])[0]
    assert refused[0] == "rate_limited", refused
    assert _mine(facility, "carol") == []
    assert (
        facility.probe("bob", [{"method": "POST", "path": "/v1/sessions", "body": {"session": "cap-bob-0"}}])[0][0]
        == 200
    )
