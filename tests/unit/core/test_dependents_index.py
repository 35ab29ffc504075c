"""A job's end touches only its own dependents, and the queries of a job's end do not grow with the run.

Measured as work, not time: the rows the gateway's tick examines, and SQLite's virtual-machine steps
(`set_progress_handler`) of the queries a job's end runs, with few and with many unrelated rows stored.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from frontdesk.config import Settings
from frontdesk.gateway import Gateway
from frontdesk.jobs.record import JobRecord
from frontdesk.plugins import SubmitContext
from frontdesk.spec.model import JobSpec
from frontdesk.store.db import _core_migrations, apply_schema, open_db
from frontdesk.store.jobs import JobStore


def _steps(conn: sqlite3.Connection, work: Callable[[], object]) -> int:
    """SQLite VM steps (in units of 10) that `work` costs on this connection."""
    count = [0]

    def tick() -> int:
        count[0] += 1
        return 0

    conn.set_progress_handler(tick, 10)
    try:
        work()
    finally:
        conn.set_progress_handler(None, 10)
    return count[0]


def _job(store: JobStore, state: str = "PENDING", deps: Sequence[int] = (), backend_id: str | None = None) -> int:
    spec = {"command": ["true"], "depends_on": list(deps)}
    report = json.dumps({"text": "x" * 1500}) if state == "COMPLETED" else None
    return store.insert_job(
        spec=json.dumps(spec),
        state=state,
        backend="local",
        backend_id=backend_id,
        principal="t12",
        submitted_at=1.0,
        report=report,
    )


def test_the_queries_of_a_job_end_cost_the_same_with_many_unrelated_rows(tmp_path: Path) -> None:
    store = JobStore(open_db(tmp_path / "fd.db"))
    gate = _job(store, "RUNNING", backend_id="1.1")
    mine = _job(store, "RUNNING", backend_id="2.1")
    own = [_job(store, deps=[mine]) for _ in range(3)]

    def costs() -> tuple[int, int, int]:
        return (
            _steps(store.conn, lambda: store.waiting_on([mine])),
            _steps(store.conn, lambda: store.by_backend_ids("local", ["2.1"])),
            _steps(store.conn, store.active),
        )

    few = costs()
    with store.transaction():
        for i in range(2000):
            _job(store, "COMPLETED", backend_id=f"{i + 10}.1")  # the run's history
    ended = costs()
    with store.transaction():
        for _ in range(2000):
            _job(store, deps=[gate])  # waiting, but on another job
    waiting = costs()
    assert [r.id for r in store.waiting_on([mine])] == own
    # 2,000 more rows each time: a scan costs ~100x more; an index search a step or two down a deeper b-tree
    assert ended[1] <= few[1] * 2 + 10 and ended[2] <= few[2] * 2 + 10, (few, ended)
    assert waiting[0] <= few[0] * 2 + 10, (few, waiting)


def test_the_index_is_filled_for_rows_stored_before_the_migration(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "old.db", isolation_level=None)
    conn.row_factory = sqlite3.Row
    apply_schema(conn, "core", _core_migrations()[:4])  # a database from before migration 5
    old = JobStore(conn)
    gate = _job(old, "RUNNING")
    dependents = [_job(old, deps=[gate]), _job(old, deps=[gate, 999])]
    conn.close()
    store = JobStore(open_db(tmp_path / "old.db"))  # what a gateway does at start: migration 5 runs
    assert [r.id for r in store.waiting_on([gate])] == dependents
    assert [r.id for r in store.waiting_on([999])] == dependents[1:]
    later = _job(store, deps=[gate])  # and every new row through the trigger
    assert [r.id for r in store.waiting_on([gate])] == [*dependents, later]


def _settings(home: Path) -> Settings:
    return Settings(
        home=home, runtime_dir=home / "run", socket=home / "run" / "gw.sock", sections={"gateway": {"plugins": []}}
    )


def test_a_job_end_examines_only_its_own_dependents(tmp_path: Path) -> None:
    flag = tmp_path / "go"
    ctx = SubmitContext(principal="root", uid=os.getuid(), cwd=str(tmp_path))

    def spec(command: str, deps: Sequence[int] = ()) -> JobSpec:
        return JobSpec.model_validate({"command": ["/bin/sh", "-c", command], "depends_on": list(deps)})

    async def run() -> tuple[list[int], list[int], dict[str, Any]]:
        gw = Gateway(_settings(tmp_path), redact=lambda text: text)
        await gw.start()
        try:
            gate = (await gw.submit(spec("sleep 600"), ctx))["id"]
            for _ in range(200):
                await gw.submit(spec("true", [gate]), ctx)  # 200 unrelated waiting dependents
            mine = (await gw.submit(spec(f"while [ ! -e '{flag}' ]; do sleep 0.05; done"), ctx))["id"]
            own = [(await gw.submit(spec("true", [mine]), ctx))["id"] for _ in range(2)]
            while gw.waiting.full:
                await asyncio.sleep(0.05)  # the start's one full pass is behind us
            examined: list[int] = []
            real = gw._advance

            async def counting(rows: Sequence[JobRecord], now: float) -> None:
                examined.extend(r.id for r in rows)
                await real(rows, now)

            gw._advance = counting  # type: ignore[method-assign]
            flag.touch()
            done = await gw.wait(own, "all", 60)
            await gw.cancel(gate)
            return examined, own, done
        finally:
            await gw.stop()

    examined, own, done = asyncio.run(run())
    assert done["done"] and [r["state"] for r in done["reports"]] == ["COMPLETED", "COMPLETED"]
    assert sorted(set(examined)) == own  # none of the 200 others was read
