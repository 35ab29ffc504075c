"""The long-poll behind `POST /v1/wait`: block until any/all of some jobs have reports, or the timeout.

Woken only by events of its own jobs (`events/waiters.py`); a jittered safety re-check now and then. A job
whose end handed its report to the flag is answered from it, not read back from the store.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from frontdesk.errors import GatewayUnavailable
from frontdesk.events.waiters import recheck_after

if TYPE_CHECKING:
    from frontdesk.gateway import Gateway

__all__ = ["wait"]


async def wait(gw: Gateway, ids: Sequence[int], mode: str, timeout: float | None) -> dict[str, Any]:
    """Block until any/all of the jobs have reports, or the timeout; no client-side polling.

    An id named twice is one job (one report): `wait 5 5` must end when job 5 does."""
    ids = list(dict.fromkeys(ids))
    for job_id in ids:
        gw.get_job(job_id)
    deadline = None if timeout is None else time.monotonic() + timeout
    flag = gw.bus.waiters.watch(ids)  # woken only by events of these jobs (events/waiters.py)
    try:
        while True:
            flag.clear()  # before the check: a report stored after it sets the flag again
            reports = {i: flag.reports.get(i) or gw.report(i) for i in ids}
            done_ids = [i for i, r in reports.items() if r is not None]
            done = bool(done_ids) if mode == "any" else len(done_ids) == len(ids)
            if gw.closing and not done:
                raise GatewayUnavailable("the gateway is shutting down; wait again once it is back")
            if done or (deadline is not None and time.monotonic() >= deadline):
                return {
                    "done": done,
                    "reports": [reports[i] for i in done_ids],
                    "pending": [i for i in ids if reports[i] is None],
                }
            pause = recheck_after()  # jittered: 5,000 waiters parked together never re-check together
            remaining = pause if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                # asyncio.timeout, not wait_for: the flag resumes this task directly (wait_for's extra
                # task costs two more passes of the loop between a job's end and its waiter).
                async with asyncio.timeout(min(remaining, pause)):
                    await flag.wait()
            except TimeoutError:
                pass
    finally:
        gw.bus.waiters.unwatch(ids, flag)
