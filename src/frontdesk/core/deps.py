"""Which waiting jobs the gateway's tick looks at: the dependents of jobs that ended, and those whose clock came due.

A waiting job (PENDING, not yet handed to a backend) can move only when one of its dependencies ends, when its
retry backoff or dependency timeout comes due, when a sibling task's end frees a slot of its array's `%N`, or
when it is new. The tick used to re-read every waiting job at every job end (O(waiting) per end: 500 held jobs
tripled the wake latency); now a job's end reads only its own dependents through `job_deps` (core migration 5,
kept by a trigger, so it survives a restart), and the clock is a heap of due times. One full pass runs at start
(it fills the heap from what is stored) and whenever someone asks for one (`examine_all`).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

from frontdesk.jobs.record import JobRecord
from frontdesk.spec.arrays import parse_array
from frontdesk.store.jobs import JobStore

__all__ = ["TAKE_NEW", "Waiting", "due_at"]

TAKE_NEW = 1000
"""New jobs examined per tick: a 10,000-task array's tasks are read and examined over ten ticks, each a short
step on the event loop, instead of one 0.3-0.5 s step during which nothing else was answered."""


def due_at(row: JobRecord, now: float) -> float | None:
    """The next moment the clock alone could move this waiting job (backoff end, dependency timeout), or None."""
    times = [row.eligible_at] if row.eligible_at is not None else []
    timeout = row.spec_get("dependency_timeout")
    if timeout:
        times.append(row.submitted_at + float(timeout))
    future = [t for t in times if t > now]
    return min(future) if future else None


class Waiting:
    """What the next tick must examine. Loop-thread only."""

    def __init__(self) -> None:
        self.full = True  # the first tick reads every waiting job (and fills the heap)
        self._ended: set[int] = set()
        self._arrays: set[int] = set()
        self._new: set[int] = set()
        self._heap: list[tuple[float, int]] = []
        self._queued: dict[int, float] = {}  # job id -> its earliest due time in the heap

    def ended(self, rec: JobRecord) -> None:
        """A job's end is stored: its dependents (and its array's waiting tasks) are examined next."""
        self._ended.add(rec.id)
        if rec.array_id is not None:
            self._arrays.add(rec.array_id)

    def examine(self, ids: Iterable[int]) -> None:
        """These jobs are new (a batch, an array's tasks): examine them next."""
        self._new.update(ids)

    def examine_all(self) -> None:
        """Examine every waiting job next (a safety net; O(waiting))."""
        self.full = True

    def at(self, job_id: int, when: float) -> None:
        """Examine this job again at `when` (kept once per job: the earliest time wins)."""
        if self._queued.get(job_id, float("inf")) <= when:
            return
        self._queued[job_id] = when
        heapq.heappush(self._heap, (when, job_id))

    def kept_waiting(self, row: JobRecord, now: float) -> None:
        """A job examined that keeps waiting: come back when its clock is due (if it has one)."""
        when = due_at(row, now)
        if when is not None:
            self.at(row.id, when)

    def pending(self, now: float) -> bool:
        """Whether the next tick has anything to examine."""
        return self.full or bool(self._ended or self._new or self._arrays) or self._due(now)

    def _due(self, now: float) -> bool:
        return bool(self._heap) and self._heap[0][0] <= now

    def take(self, store: JobStore, now: float) -> list[JobRecord]:
        """The waiting jobs to examine now (each read once), and forget them."""
        if self.full:
            self.full = False
            self._forget()
            self._heap.clear()
            self._queued.clear()
            return store.dependents_waiting()
        new = sorted(self._new)
        ids, rest = set(new[:TAKE_NEW]), new[TAKE_NEW:]
        while self._due(now):
            when, job_id = heapq.heappop(self._heap)
            if self._queued.get(job_id) == when:
                del self._queued[job_id]
                ids.add(job_id)
        found = {r.id: r for r in store.waiting_among(sorted(ids))}
        found.update((r.id, r) for r in store.waiting_on(sorted(self._ended)))
        limited = [a for a in self._arrays if _limited(store, a)]
        found.update((r.id, r) for r in store.waiting_tasks(sorted(limited)))
        self._forget()
        self._new.update(rest)  # examined at the next tick, which comes at once (`pending`)
        return [found[i] for i in sorted(found)]

    def _forget(self) -> None:
        self._ended.clear()
        self._arrays.clear()
        self._new.clear()


def _limited(store: JobStore, array_id: int) -> bool:
    """Whether an array runs at most `%N` tasks at once (a task's end then frees a slot for a waiting sibling)."""
    parent = store.get(array_id)
    text = parent.spec_data().get("array") if parent else None
    return bool(text) and parse_array(str(text)).max_running is not None
