"""Helpers for driving a Backend through its Protocol in tests (shared by the contract and per-backend suites)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from frontdesk.backends.base import Backend, BackendJob, BackendStatus
from frontdesk.config import Settings
from frontdesk.gateway import make_backend

T = TypeVar("T")
_seq = iter(range(1, 10**6))


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run one coroutine to completion on a fresh loop."""
    return asyncio.run(coro)


def make_job(settings: Settings, argv: list[str], **kw: Any) -> BackendJob:
    """A uniquely numbered attempt whose job dir and environment have spaces and quotes in them."""
    n = next(_seq)
    job_dir = settings.jobs_dir / f"{n} dir" / "attempt-1"
    job_dir.mkdir(parents=True)
    if settings.backend == "slurm":
        kw.setdefault("partition", "test")
    kw.setdefault("workdir", settings.home)
    return BackendJob(
        job_id=n,
        attempt=1,
        name=f"t{n}",
        argv=argv,
        env={"FRONTDESK_JOB_ID": str(n), "GREETING": 'it\'s "quoted" $HOME'},
        job_dir=job_dir,
        **kw,
    )


async def started(settings: Settings) -> Any:
    """A started backend of the kind the settings name (its push hints are ignored)."""
    backend = make_backend(settings)
    await backend.start(lambda ids: None)
    return backend


async def until_ended(b: Backend, ids: list[str], timeout: float = 200) -> dict[str, BackendStatus]:
    """Query (batched) until every attempt has ended."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        got = await b.query(ids)
        if all(i in got and got[i].state.terminal for i in ids):
            return got
        if loop.time() > deadline:
            raise AssertionError(f"not ended in {timeout}s: {got}")
        await asyncio.sleep(0.1)
