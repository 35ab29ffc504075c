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


def _lessons(home: Path) -> list[tuple[int, str, int]]:
    """(id, kind, times_seen) of every stored lesson, from the file."""
    conn = sqlite3.connect(f"file:{home / 'frontdesk.db'}?mode=ro", uri=True)
    try:
        return [(int(i), str(k), int(n)) for i, k, n in conn.execute("SELECT id, kind, times_seen FROM memory_lessons")]
    finally:
        conn.close()


def _recorded(home: Path, job_id: int) -> int:
    conn = sqlite3.connect(f"file:{home / 'frontdesk.db'}?mode=ro", uri=True)
    try:
        return int(
            conn.execute("SELECT COUNT(*) FROM events WHERE job_id=? AND kind='memory.lesson'", (job_id,)).fetchone()[0]
        )
    finally:
        conn.close()


def test_killed_before_the_commit_memory_learned_nothing_and_learns_once(gateway_factory: Any, workdir: Path) -> None:
    """What the memory plug-in learns from an end is in the end's one commit: a gateway killed before it has
    learned nothing, and the end derived again on the next start learns once (a lesson seen once, not twice),
    and its report lists the lesson it touched (one memory.lesson event)."""
    gw = gateway_factory(env={"FRONTDESK_FAULT": "after_report_built", "FRONTDESK_PLUGINS": "memory"})
    gate = workdir / "gate"
    cmd = (
        f"while [ ! -e {shlex.quote(str(gate))} ]; do sleep 0.02; done; "
        "echo \"ModuleNotFoundError: No module named 'fdnomod'\" >&2; exit 1"
    )
    job = gw.client.submit(spec={"command": ["/bin/sh", "-c", cmd]}, context={"cwd": str(workdir)})["id"]
    gw.wait_state(job, {"RUNNING"})
    gate.touch()
    gw.proc.wait(timeout=60)
    assert gw.proc.returncode == -9, gw.log()[-2000:]
    assert _lessons(gw.home) == [] and _recorded(gw.home, job) == 0  # rolled back with the end

    gw.env.pop("FRONTDESK_FAULT")
    gw.start()
    report = gw.client.wait([job], "all", 60)["reports"][0]
    assert report["state"] == "FAILED"
    lessons = _lessons(gw.home)
    assert [(kind, seen) for _, kind, seen in lessons] == [("missing_import", 1)]
    listed = report["extra"]["memory"]["lessons"]
    assert [lesson["id"] for lesson in listed] == [lessons[0][0]] and listed[0]["times_seen"] == 1
    assert _recorded(gw.home, job) == 1
