"""Processor-count reservations: where any whole free core serves a blocked job (a cores-only job on nodes all
alike), its reservation is textbook EASY's, a shadow time and the "extra" cores left over then, instead of
named nodes (`shadow._shadow` asks these; `backfill._Pass` spends the extra cores)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from frontdesk.policy.model import JobView, NodeView, RunningView
from frontdesk.policy.shapes import IndexedNodes

if TYPE_CHECKING:
    from frontdesk.policy.backfill import Placer

__all__ = ["counted_pools", "extra_cores"]


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
