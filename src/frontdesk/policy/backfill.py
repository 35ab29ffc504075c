"""One backfill engine for every ordering: FIFO (stop at the first blocked job), EASY (one reservation,
backfill around it) and frontdesk's (one reservation per pool, jobs in MLFQ order).

A reservation holds the nodes the blocked head job will use at its shadow time (when enough running
jobs will have ended, by their requested walltimes); a later job may start now if it ends before the
shadow time or keeps off those nodes, so backfill never delays the head.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from frontdesk.policy.model import JobView, NodeView, Placement, RunningView, apply

__all__ = ["Placer", "Reservation", "backfill"]


class Placer(Protocol):
    """Where a job may go and how it is placed there."""

    def candidates(self, job: JobView) -> Sequence[str]:
        """Names of nodes the job could ever use."""

    def signature(self, job: JobView) -> Hashable:
        """Jobs with equal signatures fit or fail alike on the same nodes."""

    def place(self, job: JobView, nodes: Mapping[str, NodeView], exclude: frozenset[str]) -> Placement | None:
        """A placement on `nodes` avoiding `exclude`, or None."""


@dataclass(frozen=True)
class Reservation:
    """The blocked head job of one queue: when it is expected to start and on which nodes."""

    job_id: str
    shadow: float
    nodes: frozenset[str]


def backfill(
    order: Sequence[JobView],
    nodes: Mapping[str, NodeView],
    running: Sequence[RunningView],
    now: float,
    placer: Placer,
    reserve_key: Callable[[JobView], str] | None,
    depth: int = 200,
) -> tuple[list[Placement], dict[str, Reservation]]:
    """Placements to start now, in `order`; `reserve_key=None` is strict FIFO."""
    work = {k: v.copy() for k, v in nodes.items()}
    planned: list[RunningView] = []
    reservations: dict[str, Reservation] = {}
    failed: set[Hashable] = set()
    out: list[Placement] = []
    for job in order[:depth]:
        key = reserve_key(job) if reserve_key else ""
        res = reservations.get(key)
        sig = placer.signature(job)
        p = None if sig in failed else placer.place(job, work, frozenset())
        if p is None:
            failed.add(sig)
        elif (
            res is not None
            and now + job.walltime_s > res.shadow
            and any(x.node in res.nodes for x in p.parts)
        ):
            p = placer.place(job, work, res.nodes)
        if p is not None:
            apply(work, p.parts, p.exclusive)
            out.append(p)
            planned.append(RunningView(job.id, p.parts, now + job.walltime_s, p.exclusive, job.job_class))
            continue
        if reserve_key is None:
            break
        if res is None:
            reservations[key] = _shadow(job, work, [*running, *planned], placer, now)
    return out, reservations


def _shadow(
    job: JobView, work: Mapping[str, NodeView], running: Sequence[RunningView], placer: Placer, now: float
) -> Reservation:
    names = set(placer.candidates(job))
    sim = {n: work[n].copy() for n in names if n in work}
    releases = sorted(
        (r for r in running if any(p.node in sim for p in r.parts)), key=lambda r: r.expected_end
    )
    i = 0
    while i < len(releases):
        t = releases[i].expected_end
        while i < len(releases) and releases[i].expected_end == t:
            r = releases[i]
            apply(sim, tuple(p for p in r.parts if p.node in sim), r.exclusive, -1)
            i += 1
        p = placer.place(job, sim, frozenset())
        if p is not None:
            return Reservation(job.id, max(now, t), frozenset(x.node for x in p.parts))
    return Reservation(job.id, math.inf, frozenset())
