"""core/quotas.py: the per-user job cap over a real store (SQLite) and a fake clock."""

from __future__ import annotations

from pathlib import Path

import pytest

from frontdesk.core.quotas import RECOUNT_S, JobQuota, Limits
from frontdesk.errors import ConfigError, RateLimited
from frontdesk.store.db import open_db


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _add(conn: object, principal: str, n: int, state: str = "PENDING") -> None:
    for _ in range(n):
        conn.execute(  # type: ignore[attr-defined]
            "INSERT INTO jobs (spec, state, backend, principal, submitted_at) VALUES ('{}', ?, 'local', ?, 0)",
            (state, principal),
        )


def test_the_cap_counts_unfinished_rows_and_sees_ended_ones_after_a_recount(tmp_path: Path) -> None:
    conn = open_db(tmp_path / "db")
    _add(conn, "alice", 7)
    _add(conn, "alice", 50, "COMPLETED")  # ended jobs never count
    _add(conn, "bob", 9)
    clock = _Clock()
    quota = JobQuota(conn, 10, clock)
    quota.take("alice", 3)  # 7 stored + 3
    with pytest.raises(RateLimited, match=r"10 unfinished jobs and 1 more.*\[limits\]\.jobs_per_user"):
        quota.take("alice", 1)
    quota.take("bob", 1)  # another principal has its own count
    conn.execute("UPDATE jobs SET state='CANCELLED' WHERE principal='alice'")
    with pytest.raises(RateLimited):  # recounted at most once a second: still refused within it
        quota.take("alice", 1)
    clock.now += RECOUNT_S
    quota.take("alice", 5)  # recounted: 0 unfinished now


def test_zero_is_no_cap_and_bad_settings_are_one_line_errors(tmp_path: Path) -> None:
    conn = open_db(tmp_path / "db")
    JobQuota(conn, 0).take("alice", 10**6)

    class S:
        mode = "facility"

        def __init__(self, limits: dict[str, object]) -> None:
            self.limits = limits

        def section(self, name: str) -> dict[str, object]:
            return self.limits if name == "limits" else {}

    assert Limits.from_settings(S({})).jobs == 20_000
    assert Limits.from_settings(S({"sessions_per_user": 5})).sessions == 5
    for bad in ({"jobs_per_user": -1}, {"jobs_per_user": "many"}, {"jobs_per_user": True}, {"job_per_user": 3}):
        with pytest.raises(ConfigError):
            Limits.from_settings(S(bad))
    assert Limits.from_settings(S({})).exempt("root")
