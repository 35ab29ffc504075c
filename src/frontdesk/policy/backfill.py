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

from frontdesk.policy.model import JobView, NodeView, Part, Placement, RunningView, apply

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
    may_reserve: Callable[[JobView], bool] | None = None,
) -> tuple[list[Placement], dict[str, Reservation]]:
    """Placements to start now, in `order`; `reserve_key=None` is strict FIFO. A blocked job for which
    `may_reserve` is false gets no reservation (it only backfills; the next blocked job may reserve)."""
    work = _CopyOnWrite(nodes)
    planned: list[RunningView] = []
    reservations: dict[str, Reservation] = {}
    failed: set[Hashable] = set()
    out: list[Placement] = []
    index: dict[str, list[RunningView]] | None = None
    excluded_failed: set[tuple[str, Hashable]] = set()
    for job in order[:depth]:
        key = reserve_key(job) if reserve_key else ""
        res = reservations.get(key)
        sig = placer.signature(job)
        # Planning only ever takes capacity, so what failed once in this pass fails again; and a job asking
        # more than the whole cluster has free cannot be placed anywhere (checked before any node is scanned).
        p = None if sig in failed or not work.may_fit(job) else placer.place(job, work.nodes, frozenset())
        if p is None:
            failed.add(sig)
        elif res is not None and now + job.walltime_s > res.shadow and any(x.node in res.nodes for x in p.parts):
            p = None if (key, sig) in excluded_failed else placer.place(job, work.nodes, res.nodes)
            if p is None:
                excluded_failed.add((key, sig))
        if p is not None:
            work.apply(p.parts, p.exclusive, 1)
            out.append(p)
            view = RunningView(job.id, p.parts, now + job.walltime_s, p.exclusive, job.job_class)
            planned.append(view)
            if index is not None:
                for x in p.parts:
                    index.setdefault(x.node, []).append(view)
            continue
        if reserve_key is None:
            break
        if res is None and (may_reserve is None or may_reserve(job)):
            if index is None:
                index = {}
                for r in [*running, *planned]:
                    for x in r.parts:
                        index.setdefault(x.node, []).append(r)
            reservations[key] = _shadow(job, work.nodes, index, placer, now)
    return out, reservations


class _CopyOnWrite:
    """A planning view of the nodes that copies a node only when a placement changes it."""

    def __init__(self, nodes: Mapping[str, NodeView]) -> None:
        self.nodes: dict[str, NodeView] = dict(nodes)
        self.owned: set[str] = set()
        self._totals: list[float] | None = None

    def may_fit(self, job: JobView) -> bool:
        """A necessary condition for any placement: the cluster has that much free in all (agent jobs may
        share cores 1:16 at most, the largest ratio)."""
        if self._totals is None:
            cpus = gpus = memory = 0.0
            for n in self.nodes.values():  # max(0, free) inlined: this loop runs over every node, every pass
                if not n.drained and not n.exclusive:
                    c, g, m = n.cpus - n.used_cpus, n.gpus - n.used_gpus, n.memory_bytes - n.used_memory
                    cpus += c if c > 0 else 0.0
                    gpus += g if g > 0 else 0
                    memory += m if m > 0 else 0
            self._totals = [cpus, gpus, memory]
        cost = job.cpus / 16.0 if job.job_class == "agent" else float(job.cpus)
        cpus, gpus, memory = self._totals
        return cost <= cpus + 1e-9 and job.gpus <= gpus and job.memory_bytes <= memory

    def apply(self, parts: tuple[Part, ...], exclusive: bool, sign: int) -> None:
        for x in parts:
            if x.node not in self.owned and x.node in self.nodes:
                self.nodes[x.node] = self.nodes[x.node].copy()
                self.owned.add(x.node)
        if self._totals is not None and sign > 0:  # planning only takes: parts hold what they take
            for x in parts:
                if x.node in self.nodes:
                    self._totals[0] -= x.cpus
                    self._totals[1] -= x.gpus
                    self._totals[2] -= x.memory_bytes
        else:
            self._totals = None
        apply(self.nodes, tuple(x for x in parts if x.node in self.nodes), exclusive, sign)


def _shadow(
    job: JobView,
    work: Mapping[str, NodeView],
    index: Mapping[str, list[RunningView]],
    placer: Placer,
    now: float,
) -> Reservation:
    names = [n for n in placer.candidates(job) if n in work]
    sim = _CopyOnWrite({n: work[n] for n in names})
    seen: dict[str, RunningView] = {}
    for n in names:
        for r in index.get(n, ()):
            seen[r.id] = r
    releases = sorted(seen.values(), key=lambda r: r.expected_end)
    groups: list[tuple[float, list[RunningView]]] = []
    for r in releases:
        if groups and groups[-1][0] == r.expected_end:
            groups[-1][1].append(r)
        else:
            groups.append((r.expected_end, [r]))
    # Cheap necessary condition first: enough cores and GPUs back in the candidate nodes.
    free_cpus = free_gpus = 0.0
    for name in names:  # the properties, inlined: this loop runs over every candidate node
        node = work[name]
        c = node.cpus - node.used_cpus
        free_cpus += c if c > 0 else 0.0
        if not node.drained:
            free_gpus += node.gpus - node.used_gpus
    need_cpus = job.cpus / 16.0 if job.job_class == "agent" else float(job.cpus)  # 16: the largest ratio
    lo = 0
    while lo < len(groups) and (free_cpus + 1e-9 < need_cpus or free_gpus < job.gpus):
        for r in groups[lo][1]:
            for x in r.parts:
                if x.node in sim.nodes:
                    free_cpus += x.cpus
                    free_gpus += x.gpus
        lo += 1
    lo = max(0, lo - 1)

    def release(state: _CopyOnWrite, first: int, last: int) -> None:
        for _, rs in groups[first : last + 1]:
            for r in rs:
                state.apply(r.parts, r.exclusive, -1)

    # More releases never make a placement impossible: gallop forward from `lo`, then bisect. Each probe is a
    # copy-on-write layer over the state it starts from, so only the nodes a release touches are copied.
    state = _CopyOnWrite(sim.nodes)
    release(state, 0, lo - 1)
    done, step = lo - 1, 1
    p: Placement | None = None
    while p is None:
        target = min(len(groups) - 1, done + step)
        if target <= done:
            return Reservation(job.id, math.inf, frozenset())
        probe = _CopyOnWrite(state.nodes)
        release(probe, done + 1, target)
        p = placer.place(job, probe.nodes, frozenset())
        if p is None:
            state, done, step = probe, target, step * 2
    lo, hi = done + 1, target
    while lo < hi:
        mid = (lo + hi) // 2
        probe = _CopyOnWrite(state.nodes)
        release(probe, done + 1, mid)
        got = placer.place(job, probe.nodes, frozenset())
        if got is None:
            lo = mid + 1
        else:
            hi, p = mid, got
    return Reservation(job.id, max(now, groups[hi][0]), frozenset(x.node for x in p.parts))
