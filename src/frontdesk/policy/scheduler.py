"""frontdesk's scheduling pass: MLFQ order, per-pool rules, borrowing, catalog-aware placement, backfill.

`plan()` is what both the embedded backend's picker and the simulator call.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence

from frontdesk.policy.backfill import AgentRules, Reservation, backfill
from frontdesk.policy.config import BorrowRule, PolicyConfig
from frontdesk.policy.model import JobView, NodeView, Placement, RunningView
from frontdesk.policy.placement import place
from frontdesk.policy.priority import FairshareLedger, ranker
from frontdesk.policy.shapes import MISS, IndexedNodes, place_cores
from frontdesk.spec.accelerators import Accelerator, GpuNeed, catalog, eligible, prefer_least_scarce

__all__ = ["PoolPlacer", "borrow_active", "plan"]


def borrow_active(rule: BorrowRule, hour: float, job: JobView) -> bool:
    """Whether `job` may borrow under `rule` at `hour`: in the window, and done before it closes."""
    if job.job_class not in rule.classes or job.pool != rule.borrower:
        return False
    start, end = rule.start_hour, rule.end_hour
    inside = start <= hour < end if start <= end else (hour >= start or hour < end)
    if not inside:
        return False
    if not rule.only_fitting:
        return True
    left = ((end - hour) % 24) * 3600.0
    return job.walltime_s <= min(rule.max_duration, left)


class PoolPlacer:
    """Places jobs in their own pool, then on idle nodes lent under an active borrowing rule."""

    def __init__(
        self,
        cfg: PolicyConfig,
        nodes: Mapping[str, NodeView],
        hour: float,
        models: Mapping[str, Accelerator] | None = None,
    ) -> None:
        self.cfg = cfg
        self.hour = hour
        self.models = models or catalog(cfg.catalog_extra)
        self.nodes = nodes
        self.by_pool: Mapping[str, Sequence[str]] = nodes.layout.by_pool if isinstance(nodes, IndexedNodes) else {}
        if not isinstance(nodes, IndexedNodes):
            by_pool: dict[str, list[str]] = {}
            for n in nodes.values():
                by_pool.setdefault(n.pool, []).append(n.name)
            self.by_pool = by_pool
        self._totals: tuple[dict[str, int], dict[str, int]] | None = None
        self._ranks: dict[GpuNeed, dict[str, int]] = {}
        self._pools = {p.name: p for p in cfg.pools}

    def totals(self) -> tuple[dict[str, int], dict[str, int]]:
        """Free and total GPUs per model (computed once, when a GPU job first needs them)."""
        if self._totals is None:
            free: dict[str, int] = {}
            total: dict[str, int] = {}
            for n in self.nodes.values():
                if n.gpu_model:
                    total[n.gpu_model] = total.get(n.gpu_model, 0) + n.gpus
                    free[n.gpu_model] = free.get(n.gpu_model, 0) + (0 if n.drained else n.free_gpus)
            self._totals = (free, total)
        return self._totals

    def model_rank(self, need: GpuNeed) -> dict[str, int]:
        """Eligible models present here, least scarce first."""
        if need not in self._ranks:
            total = self.totals()[1]
            names = [m for m in eligible(need, self.models) if m in total]
            if need.types:
                names += [t for t in need.types if t in total and t not in names]
            if need == GpuNeed():  # no constraint: GPUs outside the catalog (a workstation's card) serve too
                names += sorted(m for m in total if m not in names)
            free, total = self.totals()
            ordered = prefer_least_scarce(names, free, total, self.models)
            self._ranks[need] = {m: i for i, m in enumerate(ordered)}
        return self._ranks[need]

    def _rules(self, job: JobView) -> list[BorrowRule]:
        if not self.cfg.borrow:
            return []
        return [r for r in self.cfg.borrow if borrow_active(r, self.hour, job)]

    def candidates(self, job: JobView) -> Sequence[str]:
        """Own pool, plus lenders' nodes under active rules."""
        names = list(self.by_pool.get(job.pool, ()))
        for rule in self._rules(job):
            names += self.by_pool.get(rule.lender, [])
        return names

    def signature(self, job: JobView) -> Hashable:
        """Jobs alike in pool, shape, constraints and borrowing rights."""
        rules = self._rules(job)
        return (
            job.pool,
            job.job_class,
            job.cpus,
            job.gpus,
            job.memory_bytes,
            job.nodes,
            job.gpu if job.gpus else None,  # the GPU need matters only to a job asking GPUs
            tuple(r.lender for r in rules) if rules else (),
        )

    def cores_rule(self, job: JobView) -> tuple[Sequence[str], float] | None:
        """(own pool, core ratio) for a cores-only job spread over its own pool with no node count."""
        pool = self._pools.get(job.pool) or self.cfg.pools[0]
        if job.gpus or job.shared_gpu or job.memory_bytes or job.nodes or pool.allocation != "spread":
            return None
        if self._rules(job):
            return None
        return (job.pool,), pool.cpu_oversubscribe if job.job_class == "agent" else 1.0

    def place(self, job: JobView, nodes: Mapping[str, NodeView], exclude: frozenset[str]) -> Placement | None:
        """A placement in the own pool, else on lent nodes."""
        pool = self._pools.get(job.pool) or self.cfg.pools[0]
        rank = self.model_rank(job.gpu) if job.gpus else None
        got = (
            place_cores(job, nodes, (job.pool,), exclude, pool.allocation, pool.cpu_oversubscribe)
            if isinstance(nodes, IndexedNodes)
            else MISS
        )
        if got is MISS:
            own = [nodes[n] for n in self.by_pool.get(job.pool, ()) if n in nodes and n not in exclude]
            got = place(job, own, pool.allocation, pool.cpu_oversubscribe, rank)
        if got is not None:
            return Placement(job.id, got[0], got[1])
        for rule in self._rules(job):
            idle = [
                nodes[n]
                for n in self.by_pool.get(rule.lender, ())
                if n in nodes and nodes[n].idle and not nodes[n].drained
            ]
            lent = [n for n in sorted(idle, key=lambda n: n.name)[rule.keep_idle :] if n.name not in exclude]
            got = place(job, lent, pool.allocation, 1.0, rank)
            if got is not None:
                return Placement(job.id, got[0], got[1], borrowed_from=rule.lender)
        return None


def plan(
    queue: Sequence[JobView],
    nodes: Mapping[str, NodeView],
    running: Sequence[RunningView],
    now: float,
    hour: float,
    cfg: PolicyConfig,
    shares: FairshareLedger | None = None,
    models: Mapping[str, Accelerator] | None = None,
    in_place: bool = False,
) -> tuple[list[Placement], dict[str, Reservation]]:
    """The jobs to start now and the per-pool reservations, under policy `cfg` at time `now`; `in_place`: the
    placements are applied to `nodes` as they are made (`backfill`)."""
    snap = shares.snapshot(now, cfg.priority.principal_weight) if shares else None
    key = ranker(now, hour, cfg.priority, snap)
    mixed = _mixed_pools(cfg) if cfg.easy_head else set()
    # one mixed pool holding only batch jobs (a replayed HPC trace): every job ranks by age alone
    by_age = len(mixed) == 1 and all(j.pool in mixed and not _agent_work(j) for j in queue)
    if by_age:
        order = sorted(queue, key=_queued_at)[: cfg.backfill_depth]  # sorted is stable: as by first_come's key
    else:
        if mixed:
            key = _batch_first_come(key, mixed)
        # backfill() only considers the first backfill_depth jobs: nsmallest is sorted()[:depth], without the sort
        order = heapq.nsmallest(cfg.backfill_depth, queue, key=key)
    placer = PoolPlacer(cfg, nodes, hour, models)
    if not cfg.easy_head:
        return backfill(order, nodes, running, now, placer, lambda j: j.pool, cfg.backfill_depth, in_place=in_place)

    def may_reserve(job: JobView) -> bool:
        return job.pool not in mixed or not _agent_work(job)

    if by_age and len(order) == len(queue):
        heads: list[Iterable[JobView]] = [_ties_by_id(order)]
    else:
        heads = [_first_come(queue, pool) for pool in sorted(mixed)]

    def in_mixed(job: JobView) -> bool:
        return job.pool in mixed and _agent_work(job)

    pools = [p for p in cfg.pools if p.name in mixed]
    # the lane binds only while the pool is congested: its oldest batch job has waited `agent_lane_after`
    # (and only matters while agent work is queued there: the lane never holds back a batch job)
    queued = set() if by_age else {j.pool for j in queue if _agent_work(j)}
    oldest = {p.name: now - p.agent_lane_after for p in pools if p.agent_max_cores and p.name in queued}
    waiting = (
        {j.pool for j in queue if j.pool in oldest and not _agent_work(j) and j.queued_at <= oldest[j.pool]}
        if oldest
        else set()
    )
    rules = AgentRules(
        in_mixed,
        {p.name: p.agent_cores for p in pools},
        {p.name: p.agent_fill for p in pools},
        {p.name: p.agent_max_cores for p in pools if p.agent_max_cores is not None and p.name in waiting},
    )
    depth = cfg.backfill_depth
    return backfill(order, nodes, running, now, placer, lambda j: j.pool, depth, may_reserve, heads, rules, in_place)


def _agent_work(job: JobView) -> bool:
    return job.trial


def _batch_first_come(
    key: Callable[[JobView], tuple[int, float, float]], mixed: set[str]
) -> Callable[[JobView], tuple[int, float, float]]:
    """`key`, but batch jobs of a mixed pool rank by age alone, as on level 0 with the lowest score: they
    backfill in first-come order (EASY's), and agent work (granted trials, higher levels) goes before them.
    With no agent work queued a mixed pool then runs textbook EASY (on nodes all alike: docs/policy.md)."""

    def first_come(job: JobView) -> tuple[int, float, float]:
        if job.pool in mixed and not _agent_work(job):
            return (0, 0.0, job.queued_at)
        return key(job)

    return first_come


def _mixed_pools(cfg: PolicyConfig) -> set[str]:
    """Pools that take agent work and batch classes (hpc, training) alike."""
    return {p.name for p in cfg.pools if "agent" in p.classes and {"hpc", "training"} & set(p.classes)}


def _queued_at(job: JobView) -> float:
    return job.queued_at


def _ties_by_id(by_age: Sequence[JobView]) -> Iterator[JobView]:
    """`_first_come` over one pool's whole queue already sorted by age: jobs queued at the same time, by id."""
    k = 0
    while k < len(by_age):
        m = k + 1
        while m < len(by_age) and by_age[m].queued_at == by_age[k].queued_at:
            m += 1
        yield from (by_age[k:m] if m == k + 1 else sorted(by_age[k:m], key=_job_id))
        k = m


def _job_id(job: JobView) -> str:
    return job.id


def _first_come(queue: Sequence[JobView], pool: str) -> Iterator[JobView]:
    """`pool`'s queued jobs, oldest first (EASY's order), sorted lazily: a pass reads only the first few.

    In a mixed pool the oldest job goes first (EASY's head: it starts or holds the pool's reservation), and
    while the head starts, the next oldest is the head: so the reservation always belongs to the oldest
    blocked job, as in textbook EASY, and agent work (granted trials) only backfills into holes that do not
    delay it. Backfill then takes agent work in MLFQ order, then batch jobs in first-come order."""
    heap = [(j.queued_at, j.id, k) for k, j in enumerate(queue) if j.pool == pool]
    heapq.heapify(heap)
    while heap:
        yield queue[heapq.heappop(heap)[2]]
