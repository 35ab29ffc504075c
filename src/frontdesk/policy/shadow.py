"""The reservation search of one backfill pass: when and on which nodes a blocked job could start if the
running jobs end as expected (`_shadow`), over a copy-on-write planning view of the nodes."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING

from frontdesk.policy.counted import Where, counted_pools, extra_cores, release_until_fit
from frontdesk.policy.model import JobView, NodeView, Part, Placement, RunningView, apply
from frontdesk.policy.shapes import IndexedNodes

if TYPE_CHECKING:
    from frontdesk.policy.backfill import Placer

__all__ = ["Reservation", "Runs", "release_until_fit"]


@dataclass(frozen=True, eq=False)
class Reservation:
    """The blocked head job of one queue: when it is expected to start and on which nodes."""

    job_id: str
    shadow: float
    where: Where = field(repr=False)
    """`nodes`, or a function that works them out (a processor-count reservation's nodes are read only by
    agent work: most passes never ask)."""
    extra: float | None = None
    """A processor-count reservation (textbook EASY's): the whole cores left over at the shadow time once the
    head has its own, which jobs ending after the shadow time may hold wherever they run; None: the head holds
    `nodes` by name (nodes that differ: GPUs, sizes, whole-node or shared-core rules)."""

    @cached_property
    def nodes(self) -> frozenset[str]:
        """The nodes the head will use at the shadow time."""
        return self.where if isinstance(self.where, frozenset) else self.where()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Reservation):
            return NotImplemented
        return self._fields() == other._fields()

    def _fields(self) -> tuple[str, float, frozenset[str], float | None]:
        return (self.job_id, self.shadow, self.nodes, self.extra)

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return f"Reservation({self.job_id!r}, {self.shadow!r}, {set(self.nodes)!r}, {self.extra!r})"


class Runs:
    """The running and planned jobs of one pass; by node only when first asked for (a reservation on nodes
    all alike reads them all, or a memo, and needs no per-node index)."""

    def __init__(self, running: Sequence[RunningView]) -> None:
        self.running = running
        self.planned: list[RunningView] = []
        self._by_node: dict[str, list[RunningView]] | None = None

    def add(self, view: RunningView) -> None:
        """A job planned to start in this pass."""
        self.planned.append(view)
        if self._by_node is not None:
            for x in view.parts:
                self._by_node.setdefault(x.node, []).append(view)

    def by_node(self) -> dict[str, list[RunningView]]:
        """Node name -> the jobs (running, then planned) with a part there."""
        if self._by_node is None:
            index: dict[str, list[RunningView]] = {}
            for r in [*self.running, *self.planned]:
                for x in r.parts:
                    index.setdefault(x.node, []).append(r)
            self._by_node = index
        return self._by_node


class _CopyOnWrite:
    """A planning view of the nodes that copies a node only when a placement changes it. Over `IndexedNodes`
    (the simulator's) the view is indexed too: its index is copied, and follows every change."""

    def __init__(self, nodes: Mapping[str, NodeView], in_place: bool = False) -> None:
        self.nodes: dict[str, NodeView]
        if in_place:  # the caller's own nodes, changed as placements are made (no copy)
            assert isinstance(nodes, dict)
            self.nodes = nodes
        else:
            self.nodes = nodes.planning_copy() if isinstance(nodes, IndexedNodes) else dict(nodes)
        self.in_place = in_place
        self.owned: set[str] = set()
        self._totals: list[float] | None = None

    def may_fit(self, job: JobView) -> bool:
        """A necessary condition for any placement: the cluster has that much free in all (agent jobs may
        share cores 1:16 at most, the largest ratio)."""
        nodes = self.nodes
        if isinstance(nodes, IndexedNodes) and not nodes.odd:
            self._totals = nodes.totals
        elif self._totals is None:
            cpus = gpus = memory = 0.0
            for n in nodes.values():  # max(0, free) inlined: this loop runs over every node, every pass
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
        nodes, owned = self.nodes, self.owned
        fresh = [] if self.in_place else [x.node for x in parts if x.node not in owned]
        if any(n not in nodes for n in fresh):
            fresh = [n for n in fresh if n in nodes]
            mine = tuple(x for x in parts if x.node in nodes)
        else:  # owned names are in nodes: every part is
            mine = parts
        for name in fresh:
            nodes[name] = nodes[name].copy()
        owned.update(fresh)
        if isinstance(nodes, IndexedNodes):
            self._totals = None
            nodes.apply(mine, exclusive, sign)
            return
        if self._totals is not None and sign > 0:  # planning only takes: parts hold what they take
            for x in mine:
                self._totals[0] -= x.cpus
                self._totals[1] -= x.gpus
                self._totals[2] -= x.memory_bytes
        else:
            self._totals = None
        apply(nodes, mine, exclusive, sign)


def _shadow(job: JobView, work: Mapping[str, NodeView], runs: Runs, placer: Placer, now: float) -> Reservation:
    """When and where `job` could start if the running jobs on its candidate nodes end as expected; on
    interchangeable nodes (`counted_pools`), with the extra cores left over then."""
    names = list(candidates := placer.candidates(job))
    if not all(map(work.__contains__, candidates)):
        names = [n for n in candidates if n in work]
    res, whole = _search(job, names, work, runs, placer, now)
    pools = None if math.isinf(res.shadow) else counted_pools(job, names, work, placer)
    if pools is None:
        return res
    if whole is not None:  # the count saw every release up to the shadow time: its whole cores are extra_cores'
        return replace(res, extra=max(0.0, float(whole - job.cpus)))
    return replace(res, extra=extra_cores(job, names, tuple(pools), work, runs.by_node(), res.shadow))


def _search(
    job: JobView,
    names: list[str],
    work: Mapping[str, NodeView],
    runs: Runs,
    placer: Placer,
    now: float,
) -> tuple[Reservation, float | None]:
    """`_shadow`'s search: the first release group after which `job` fits, and where; with the whole free
    cores on `names` then when a count found it at that group's own time (else None)."""
    base: Mapping[str, NodeView] = work
    if not (isinstance(work, IndexedNodes) and len(names) == len(work)):  # else: the candidates are all of work
        base = {n: work[n] for n in names}
        if isinstance(work, IndexedNodes):
            base = IndexedNodes(base)
    rule = placer.cores_rule(job) if isinstance(base, IndexedNodes) and not base.odd else None
    if rule is not None:  # count releases until it fits, instead of probing placements
        assert isinstance(base, IndexedNodes)
        return _shadow_by_counts(job, names, work, base, runs, rule, now)
    groups = _release_groups(names, work, runs)
    lo = _first_possible(job, names, work, groups, base)

    # More releases never make a placement impossible: gallop forward from `lo`, then bisect. Each probe is a
    # copy-on-write layer over the state it starts from, so only the nodes a release touches are copied.
    state = _CopyOnWrite(base)
    _release(groups, state, 0, lo - 1)
    done, step = lo - 1, 1
    p: Placement | None = None
    while p is None:
        target = min(len(groups) - 1, done + step)
        if target <= done:
            return Reservation(job.id, math.inf, frozenset()), None
        probe = _CopyOnWrite(state.nodes)
        _release(groups, probe, done + 1, target)
        p = placer.place(job, probe.nodes, frozenset())
        if p is None:
            state, done, step = probe, target, step * 2
    lo, hi = done + 1, target
    while lo < hi:
        mid = (lo + hi) // 2
        probe = _CopyOnWrite(state.nodes)
        _release(groups, probe, done + 1, mid)
        got = placer.place(job, probe.nodes, frozenset())
        if got is None:
            lo = mid + 1
        else:
            hi, p = mid, got
    return Reservation(job.id, max(now, groups[hi][0]), frozenset(x.node for x in p.parts)), None


def _shadow_by_counts(
    job: JobView,
    names: list[str],
    work: Mapping[str, NodeView],
    base: IndexedNodes,
    runs: Runs,
    rule: tuple[Sequence[str], float],
    now: float,
) -> tuple[Reservation, float | None]:
    """`_shadow` for a job `release_until_fit` answers; a state's answer is kept (a pass that starts
    nothing leaves the next pass the same state, running jobs and planned ones)."""
    memo, key = base.layout.memo, (base.version, job.cpus, job.job_class, tuple(rule[0]), rule[1])
    if key not in memo:
        if len(memo) > 64:
            memo.clear()
        groups = _release_groups(names, work, runs)
        # from group 0: the counting itself finds the first group after which the job fits
        found = release_until_fit(job, base, groups, 0, *rule, full=base is work)
        memo[key] = None if found is None else (groups[found[0]][0], found[1], found[2])
    got = memo[key]
    if got is None:
        return Reservation(job.id, math.inf, frozenset()), None
    at, where, whole = got
    # a group already due (a job past its expected end) puts the shadow at `now`: later groups may be due too
    return Reservation(job.id, max(now, at), where), (whole if at >= now else None)


def _release_groups(
    names: list[str], work: Mapping[str, NodeView], runs: Runs
) -> list[tuple[float, list[RunningView]]]:
    """The running jobs on these nodes, grouped by expected end, earliest first; within a group, in the order
    of the first of `names` they hold a part on, then running before planned (the node walk's order)."""
    layout = work.layout if isinstance(work, IndexedNodes) else None
    if layout is not None and len(names) == len(layout.position) and names == list(layout.names):
        position = layout.position
        # every node, in the layout's order: every job (no per-node walk), ties put in the walk's order
        ordered = sorted([r for r in [*runs.running, *runs.planned] if r.parts], key=_expected_end)
        groups = []
        k = 0
        while k < len(ordered):
            end = ordered[k].expected_end
            m = k + 1
            while m < len(ordered) and ordered[m].expected_end == end:
                m += 1
            group = ordered[k:m]
            if len(group) > 1:
                group.sort(key=lambda r: min(position[x.node] for x in r.parts))
            groups.append((end, group))
            k = m
        return groups
    index = runs.by_node()
    seen: dict[str, RunningView] = {}
    for n in names:
        for r in index.get(n, ()):
            seen[r.id] = r
    groups = []
    for r in sorted(seen.values(), key=_expected_end):
        if groups and groups[-1][0] == r.expected_end:
            groups[-1][1].append(r)
        else:
            groups.append((r.expected_end, [r]))
    return groups


def _expected_end(r: RunningView) -> float:
    return r.expected_end


def _first_possible(
    job: JobView,
    names: list[str],
    work: Mapping[str, NodeView],
    groups: list[tuple[float, list[RunningView]]],
    nodes: Mapping[str, NodeView],
) -> int:
    """The first release group after which enough cores and GPUs are back (a cheap necessary condition)."""
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
                if x.node in nodes:
                    free_cpus += x.cpus
                    free_gpus += x.gpus
        lo += 1
    return max(0, lo - 1)


def _release(groups: list[tuple[float, list[RunningView]]], state: _CopyOnWrite, first: int, last: int) -> None:
    """Take the release groups first..last (inclusive) off `state`."""
    for _, rs in groups[first : last + 1]:
        for r in rs:
            state.apply(r.parts, r.exclusive, -1)
