"""Processor-count reservations: where any whole free core serves a blocked job (a cores-only job on nodes all
alike), its reservation is textbook EASY's, a shadow time and the "extra" cores left over then, instead of
named nodes (`shadow._shadow` asks these; `backfill._Pass` spends the extra cores). `release_until_fit` is the
search for such a job: it counts releases (whole cores, nodes the job fits alone) instead of probing placements."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from frontdesk.policy.model import JobView, NodeView, RunningView
from frontdesk.policy.shapes import MISS, IndexedNodes, Miss, Shape, sorted_of, take_cores

if TYPE_CHECKING:
    from frontdesk.policy.backfill import Placer

__all__ = ["Where", "counted_pools", "extra_cores", "release_until_fit"]

Where = frozenset[str] | Callable[[], frozenset[str]]
"""A reservation's nodes, or how to work them out when first asked for."""


def counted_pools(
    job: JobView, names: Sequence[str], work: Mapping[str, NodeView], placer: Placer
) -> Sequence[str] | None:
    """The pools of `job`'s candidate nodes when its reservation may be a processor count: a cores-only job,
    spread with no node count or core sharing, on nodes that are all alike (same cores, no GPUs). Any whole
    free core then serves it (`placement._spread_cores`), so it starts once enough are free, wherever they
    are, as on textbook EASY's processor pool. None: keep a reservation of named nodes."""
    rule = placer.cores_rule(job)
    if rule is None or rule[1] != 1.0 or not names:
        return None
    memo = work.layout.memo if isinstance(work, IndexedNodes) else None
    key = ("alike", tuple(names)) if memo is not None and len(names) < len(work) else ("alike",)
    alike = memo.get(key) if memo is not None else None
    if alike is None:
        cpus = work[names[0]].cpus
        alike = all(work[n].cpus == cpus and not work[n].gpus for n in names)
        if memo is not None:
            memo[key] = alike
    return rule[0] if alike else None


def extra_cores(
    job: JobView,
    names: Sequence[str],
    pools: tuple[str, ...],
    work: Mapping[str, NodeView],
    index: Mapping[str, list[RunningView]],
    at: float,
) -> float:
    """The whole free cores on `names` (`pools`' nodes) once every job there expected to end by `at` has ended,
    less `job`'s (a state's answer is kept, as `_shadow_by_counts` keeps its own)."""
    memo = work.layout.memo if isinstance(work, IndexedNodes) else None
    key = ("extra", work.version, pools, job.cpus, at) if isinstance(work, IndexedNodes) else None
    if memo is not None and key in memo:
        got: float = memo[key]
        return got
    member = set(names)
    state: dict[str, list[Any]] = {}
    """name -> [used cores, jobs, held exclusively] after the releases (model.apply, cores only)"""
    seen: set[str] = set()
    for n in names:
        for r in index.get(n, ()):
            if r.id in seen or r.expected_end > at:
                continue
            seen.add(r.id)
            for x in r.parts:
                if x.node not in member:
                    continue
                c = state.get(x.node)
                if c is None:
                    node = work[x.node]
                    c = state[x.node] = [node.used_cpus, node.jobs, node.exclusive]
                c[0] -= x.cpus
                c[1] -= 1
                if r.exclusive:
                    c[2] = False
                if c[1] == 0:
                    c[0], c[2] = 0.0, False
    whole = 0
    for n in names:
        node = work[n]
        used, _, held = state.get(n) or (node.used_cpus, 0, node.exclusive)
        free = node.cpus - used
        if not node.drained and not held and free >= 1:
            whole += int(free)
    extra = max(0.0, float(whole - job.cpus))
    if memo is not None:
        memo[key] = extra
    return extra


Groups = Sequence[tuple[float, Sequence[RunningView]]]


def release_until_fit(
    job: JobView,
    base: IndexedNodes,
    groups: Groups,
    first: int,
    pools: Sequence[str],
    ratio: float,
    full: bool = False,
) -> tuple[int, Where, float] | None:
    """The reservation search for a cores-only `job` spread with no node count: release `groups` in order
    (running jobs by expected end) until `place_cores` would place it, counting as it goes the two things that
    decide (a node it fits alone, the whole free cores) instead of probing placements. Returns the first group
    index from `first` on after which it fits, the nodes its parts would use then (or how to work them out),
    and the whole free cores of `pools` then; None when it never fits. `full`: every running job's parts lie
    on `base`'s nodes."""
    cost, need, member = job.cpus / ratio, job.cpus, set(pools)
    if cost > max(base.layout.widest.get(p, 0) for p in pools) + 1e-9:  # it never fits one node alone
        counted = _count_whole_cores(need, base, groups, first, member, full)
        if counted is None:
            return None
        if counted is not MISS:
            i, whole = counted
            # the nodes are read from this state's index, which the pass changes next: from a snapshot of it
            snap, released = base.snapshot(), groups[: i + 1]
            return i, lambda: _nodes_after(job, snap, pools, _gained(snap, released, member)), whole
    return _count_node_by_node(job, base, groups, first, pools, ratio)


def _count_node_by_node(
    job: JobView, base: IndexedNodes, groups: Groups, first: int, pools: Sequence[str], ratio: float
) -> tuple[int, frozenset[str], float] | None:
    """`release_until_fit`, each release applied to its node as `model.apply` does."""
    cost, need, member = job.cpus / ratio, job.cpus, set(pools)
    whole = alone = 0
    for (_, free), names in base.shapes(pools).items():
        whole += int(free) * len(names) if free >= 1 else 0
        alone += len(names) if free + 1e-9 >= cost else 0
    changed: dict[str, list[Any]] = {}
    """name -> [used cores, jobs, held exclusively, cores, has GPUs, counted (not drained, in pools)]"""
    for i, (_, runs) in enumerate(groups):
        for r in runs:
            for x in r.parts:
                c = changed.get(x.node)
                if c is None:
                    n = base.get(x.node)
                    if n is None:
                        continue
                    c = changed[x.node] = [
                        n.used_cpus,
                        n.jobs,
                        n.exclusive,
                        n.cpus,
                        n.gpus,
                        not n.drained and n.pool in member,
                    ]
                if c[5] and not c[2]:  # its count before the release
                    free = c[3] - c[0]
                    whole -= int(free) if free >= 1 else 0
                    alone -= 1 if free + 1e-9 >= cost else 0
                c[0] += -1 * x.cpus  # model.apply(..., sign=-1), cores only
                c[1] += -1
                if r.exclusive:
                    c[2] = False
                if c[1] == 0:
                    c[0], c[2] = 0.0, False
                if c[5] and not c[2]:
                    free = c[3] - c[0]
                    whole += int(free) if free >= 1 else 0
                    alone += 1 if free + 1e-9 >= cost else 0
        if i >= first and (alone > 0 or whole >= need):
            shapes = {k: v - changed.keys() for k, v in base.shapes(pools).items()}
            for name, c in changed.items():
                if c[5] and not c[2]:
                    shape = (1 if c[4] else 0, c[3] - c[0])
                    shapes.setdefault(shape, set()).add(name)
            entries = [(shape, names, "") for shape, names in shapes.items()]
            got = take_cores(job, entries, sorted_of(entries), frozenset(), ratio, "spread")
            return None if got is None or got is MISS else (i, frozenset(name for name, _ in got), whole)
    return None


def _count_whole_cores(
    need: int, base: IndexedNodes, groups: Groups, first: int, member: set[str], full: bool = False
) -> tuple[int, float] | Miss | None:
    """`release_until_fit` for a job no node fits alone, while every core count it meets is whole: a release
    of `x` cores then frees exactly `x` whole cores on a counted node. Returns the group index and the whole
    free cores then; MISS when a release is exclusive or fractional (then count node by node). `full`: every
    running job's parts lie on `base`'s nodes."""
    key = base._key
    whole = 0.0
    usable, integral = 0, True
    for (_, free), names in base.shapes(tuple(member)).items():
        whole += int(free) * len(names) if free >= 1 else 0
        usable += len(names)
        integral = integral and free.is_integer()
    if full and integral and usable == len(base):
        # every node counted, every free count whole: a job's release adds its cores (kept per job)
        totals = base.layout.run_totals
        if len(totals) > 100_000:
            totals.clear()
        for i, (_, runs) in enumerate(groups):
            for r in runs:
                got = totals.get(id(r))
                if got is None or got[0] is not r:
                    cpus = [x.cpus for x in r.parts]
                    got = totals[id(r)] = (r, sum(cpus), not r.exclusive and all(c.is_integer() for c in cpus))
                if not got[2]:
                    return MISS
                whole += got[1]
            if i >= first and whole >= need:
                return i, whole
        return None
    seen: set[str] = set()
    for i, (_, runs) in enumerate(groups):
        for r in runs:
            if r.exclusive:
                return MISS
            for x in r.parts:
                k = key.get(x.node)
                if k is None or k[0] not in member:  # not counted: drained, held, another pool's
                    continue
                if x.node not in seen:
                    if not k[1][1].is_integer():
                        return MISS
                    seen.add(x.node)
                if not x.cpus.is_integer():
                    return MISS
                whole += x.cpus
        if i >= first and whole >= need:
            return i, whole
    return None


def _gained(base: IndexedNodes, groups: Groups, member: set[str]) -> dict[str, float]:
    """The cores each counted node gets back from `groups` (`_count_whole_cores`'s releases)."""
    key = base._key
    gained: dict[str, float] = {}
    for _, runs in groups:
        for r in runs:
            for x in r.parts:
                k = key.get(x.node)
                if k is not None and k[0] in member:
                    gained[x.node] = gained.get(x.node, 0.0) + x.cpus
    return gained


def _nodes_after(job: JobView, base: IndexedNodes, pools: Sequence[str], gained: Mapping[str, float]) -> frozenset[str]:
    """The nodes of the job's parts once the nodes in `gained` got those cores back: `placement._spread_cores`
    (the job fits no node alone), read from the index's names in order merged with the nodes that moved."""
    moved: dict[Shape, list[str]] = {}
    for name, g in gained.items():
        k = base._key[name]
        assert k is not None
        moved.setdefault((k[1][0], k[1][1] + g), []).append(name)
    stay: dict[Shape, list[str]] = {}
    for pool in pools:
        for shape in base._buckets.get(pool, {}):
            stay.setdefault(shape, []).append(pool)
    rem, out = job.cpus, []
    for shape in sorted((s for s in stay.keys() | moved.keys() if s[1] >= 1), key=lambda s: (s[0], -s[1])):
        # the nodes of this shape now, less those a release moved (to their new shape), by name
        lists: list[Iterable[str]] = [
            (n for n in base.ordered(pool, shape) if n not in gained) for pool in stay.get(shape, ())
        ]
        lists.append(sorted(moved.get(shape, ())))
        for name in heapq.merge(*lists):
            out.append(name)
            rem -= int(shape[1])
            if rem <= 0:
                return frozenset(out)
    raise AssertionError("enough whole cores are free")
