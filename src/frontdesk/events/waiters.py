"""Long-poll waiters indexed by what they wait for (a job id), so an event wakes only its own waiters.

With every waiter parked on one condition, each event woke all of them and each re-read its jobs: 2,000
waiters turned 100 submits/s into seconds of latency. Here an event for job N sets only the flags of the
waiters of job N; a waiter that wakes re-checks its jobs once. Loop-thread only, no locks.

A job's end hands its stored report to its waiters' flags (`ended`): the waiter answers with it instead of
reading the row back and decoding it again.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterable
from typing import Any

__all__ = ["RECHECK_SECONDS", "Flag", "Waiters", "recheck_after"]

RECHECK_SECONDS = 300.0
"""A parked waiter re-reads its jobs this often even without news (a safety net; events are the path)."""


def recheck_after() -> float:
    """Seconds until a waiter's safety re-check, jittered: waiters parked together (or re-parked together after
    a restart) must not all re-check in the same instant."""
    return RECHECK_SECONDS * random.uniform(0.5, 1.5)


class Flag(asyncio.Event):
    """One long-poll's wake-up flag, and the reports its jobs' ends handed over (job id -> stored report)."""

    def __init__(self) -> None:
        super().__init__()
        self.reports: dict[int, dict[str, Any]] = {}


class Waiters:
    """job id -> the wake-up flags of the long-polls waiting on it."""

    def __init__(self) -> None:
        self._by_job: dict[int, set[Flag]] = {}
        self._all: set[Flag] = set()

    def watch(self, job_ids: Iterable[int]) -> Flag:
        """A flag set whenever one of these jobs has news (and on shutdown); unwatch it when done."""
        flag = Flag()
        for job_id in set(job_ids):
            self._by_job.setdefault(job_id, set()).add(flag)
        self._all.add(flag)
        return flag

    def unwatch(self, job_ids: Iterable[int], flag: Flag) -> None:
        """Forget a flag (always, also when the wait failed)."""
        for job_id in set(job_ids):
            flags = self._by_job.get(job_id)
            if flags is not None:
                flags.discard(flag)
                if not flags:
                    del self._by_job[job_id]
        self._all.discard(flag)

    def wake(self, job_id: int) -> int:
        """Set the flags of this job's waiters; how many."""
        flags = self._by_job.get(job_id, ())
        for flag in flags:
            flag.set()
        return len(flags)

    def ended(self, job_id: int, report: dict[str, Any]) -> int:
        """Hand a job's stored report (exactly what its row now holds) to its waiters and wake them; how many."""
        flags = self._by_job.get(job_id, ())
        for flag in flags:
            flag.reports[job_id] = report
            flag.set()
        return len(flags)

    def wake_all(self) -> None:
        """Set every flag (the gateway is stopping: waiters answer at once)."""
        for flag in self._all:
            flag.set()

    def __len__(self) -> int:
        return len(self._all)

    def jobs_watched(self) -> int:
        """How many distinct jobs have a waiter."""
        return len(self._by_job)
