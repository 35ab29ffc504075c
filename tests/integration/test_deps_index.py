"""Dependents are indexed by their dependency (core migration 5): across a gateway kill, and with a retry backoff.

The index is stored (`job_deps`), so a gateway started again finds each job's dependents at its end; the
clock (backoffs, dependency timeouts) is a heap the start's one full pass fills again.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any


def _wait_for(path: Path) -> list[str]:
    q = shlex.quote(str(path))
    return ["/bin/sh", "-c", f"while [ ! -e {q} ]; do sleep 0.05; done"]


def test_a_dependency_that_ends_after_a_kill9_frees_its_dependents_only(gateway: Any, workdir: Path) -> None:
    c = gateway.client
    ctx = {"cwd": str(workdir)}
    mine = c.submit(spec={"command": _wait_for(workdir / "go")}, context=ctx)["id"]
    other = c.submit(spec={"command": _wait_for(workdir / "never")}, context=ctx)["id"]
    own = [c.submit(spec={"command": ["true"], "depends_on": [mine]}, context=ctx)["id"] for _ in range(3)]
    held = [c.submit(spec={"command": ["true"], "depends_on": [other]}, context=ctx)["id"] for _ in range(3)]
    gateway.wait_state(mine, {"RUNNING"})
    gateway.kill9()
    gateway.start()
    gateway.wait_state(mine, {"RUNNING"})
    (workdir / "go").touch()  # ends after the restart: its dependents are found through the stored index
    res = c.wait(own, "all", 60)
    assert res["done"] and {r["state"] for r in res["reports"]} == {"COMPLETED"}
    assert {c.job(i)["state"] for i in held} == {"PENDING"}
    c.cancel(other)
    res = c.wait(held, "all", 60)
    assert {r["state"] for r in res["reports"]} == {"DEPENDENCY_NEVER_SATISFIED"}


def test_a_retry_backoff_and_a_dependency_timeout_come_due_without_any_job_ending(gateway: Any, workdir: Path) -> None:
    c = gateway.client
    ctx = {"cwd": str(workdir)}
    marker = shlex.quote(str(workdir / "once"))
    cmd = f"if [ -e {marker} ]; then echo second; else touch {marker}; exit 4; fi"
    retried = c.submit(
        spec={"command": ["/bin/sh", "-c", cmd], "retry": {"count": 1, "on": ["FAILED"], "backoff": "1s"}}, context=ctx
    )["id"]
    gate = c.submit(spec={"command": _wait_for(workdir / "never")}, context=ctx)["id"]
    timed = c.submit(spec={"command": ["true"], "depends_on": [gate], "dependency_timeout": "1s"}, context=ctx)["id"]
    res = c.wait([retried, timed], "all", 60)
    states = {r["job_id"]: (r["state"], r["attempts"]) for r in res["reports"]}
    assert states[retried] == ("COMPLETED", 2)
    assert states[timed][0] == "DEPENDENCY_NEVER_SATISFIED"
    c.cancel(gate)
