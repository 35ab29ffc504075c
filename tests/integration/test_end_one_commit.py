"""Issue 21: a job's end is one commit. Its terminal state, its report and its terminal events are stored
together, so a gateway killed while it builds the report leaves the job as it was (the end is derived again
on the next start), and one killed just after the commit leaves all of it (told on the next start).

Read straight from the database file after a SIGKILL, then through the API after a restart.
"""

from __future__ import annotations

import shlex
import sqlite3
from pathlib import Path
from typing import Any

import pytest

TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "DEPENDENCY_NEVER_SATISFIED"}


@pytest.fixture(autouse=True)
def _core_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FRONTDESK_PLUGINS", "none")


def _stored(home: Path, job_id: int) -> tuple[str, bool, list[str], int]:
    """(state, has a report, kinds of its terminal events, report_pending) as the database file holds them."""
    conn = sqlite3.connect(f"file:{home / 'frontdesk.db'}?mode=ro", uri=True)
    try:
        state, report, pending = conn.execute(
            "SELECT state, report, report_pending FROM jobs WHERE id=?", (job_id,)
        ).fetchone()
        kinds = [
            kind
            for kind, data in conn.execute("SELECT kind, data FROM events WHERE job_id=? ORDER BY seq", (job_id,))
            if kind == "job.report" or (kind == "job.state" and any(f'"{s}"' in data for s in TERMINAL))
        ]
    finally:
        conn.close()
    return state, report is not None, kinds, pending


def _killed_at(gateway_factory: Any, workdir: Path, point: str) -> tuple[Any, int]:
    gw = gateway_factory(env={"FRONTDESK_FAULT": point})
    gate = workdir / "gate"
    cmd = f"echo out; while [ ! -e {shlex.quote(str(gate))} ]; do sleep 0.02; done"
    job = gw.client.submit(spec={"command": ["/bin/sh", "-c", cmd]}, context={"cwd": str(workdir)})["id"]
    gw.wait_state(job, {"RUNNING"})
    gate.touch()
    gw.proc.wait(timeout=60)
    assert gw.proc.returncode == -9, gw.log()[-2000:]
    return gw, job


def _told_once_after_restart(gw: Any, job: int) -> None:
    gw.env.pop("FRONTDESK_FAULT")
    gw.start()
    res = gw.client.wait([job], "all", 60)
    assert res["done"] and res["reports"][0]["state"] == "COMPLETED"
    assert res["reports"][0]["stdout_tail"] == ["out"]
    state, has_report, kinds, pending = _stored(gw.home, job)
    assert (state, has_report, kinds, pending) == ("COMPLETED", True, ["job.state", "job.report"], 0)


def test_killed_before_the_commit_the_job_is_as_it_was(gateway_factory: Any, workdir: Path) -> None:
    gw, job = _killed_at(gateway_factory, workdir, "after_report_built")
    state, has_report, kinds, pending = _stored(gw.home, job)
    assert (state, has_report, kinds, pending) == ("RUNNING", False, [], 0)  # no state stored without its report
    _told_once_after_restart(gw, job)


def test_killed_after_the_commit_state_report_and_events_are_all_stored(gateway_factory: Any, workdir: Path) -> None:
    gw, job = _killed_at(gateway_factory, workdir, "after_state_stored")
    state, has_report, kinds, pending = _stored(gw.home, job)
    assert (state, has_report, kinds) == ("COMPLETED", True, ["job.state", "job.report"])
    assert pending == 2  # EVENTS_STORED: the next start fans them out, and tells the end once
    _told_once_after_restart(gw, job)
