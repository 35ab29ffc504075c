"""The embedded backend's picker: the local queue and free resources → which attempts start now.

Pools on the embedded backend are slices of the one machine (`[[policy.pools]]` with cpus/memory/gpus);
without slices every pool shares the whole machine. Jobs are ordered and placed by `scheduler.plan`,
the same code the simulator runs. Duck-typed over the local backend's QueuedJob and FreeResources.
A shared-GPU job (a fraction of one device) counts no whole GPU in the plan; its device is then taken from
the backend's GPU ledger (backends/gpushare.py), in plan order, and a job whose device is not free waits.
With `[policy.suspend] enabled`, the picker also answers lends: waiting trials started on the cores of running
batch jobs they suspend (policy/suspend_live.py, the simulator's choice), as `Picks`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from frontdesk.backends.local import take_gpus
from frontdesk.backends.local.lending import Picks, Suspensions
from frontdesk.policy.config import PolicyConfig, PoolConfig
from frontdesk.policy.model import JobView, NodeView
from frontdesk.policy.priority import FairshareLedger
from frontdesk.policy.scheduler import plan
from frontdesk.policy.suspend_live import choose_lends, ghost_views, running_view
from frontdesk.spec.accelerators import GpuNeed, canonical, match_model

__all__ = ["JobMeta", "build_nodes", "make_picker", "to_view"]

SHARED = "local"


@dataclass(frozen=True)
class JobMeta:
    """What the policy decided at admission that the backend's queue entry does not carry."""

    job_class: str
    pool: str
    trial: bool
    principal: str
    group: str = ""
    class_reason: str = ""


def _sliced(cfg: PolicyConfig) -> bool:
    return any(p.cpus is not None or p.gpus is not None for p in cfg.pools)


def build_nodes(cfg: PolicyConfig, free: Any, drained: bool) -> dict[str, NodeView]:
    """One NodeView per pool slice (or one shared node), with the running jobs' use subtracted."""
    gpu_models: dict[int, str] = dict(getattr(free, "gpu_models", {}) or {})
    total_cpus = int(getattr(free, "total_cpus", 0) or free.cpus)
    total_mem = int(getattr(free, "total_memory_bytes", 0) or free.memory_bytes)
    # a card the catalog does not know keeps its own name: unconstrained GPU jobs may still use it
    model = next((m for m in (match_model(v) for v in gpu_models.values()) if m), None) or next(
        (str(v) for v in gpu_models.values() if v), None
    )
    if not _sliced(cfg):
        node = NodeView(SHARED, SHARED, total_cpus, total_mem, len(gpu_models), model, drained=drained)
        node.used_cpus = float(total_cpus - free.cpus)
        node.used_memory = total_mem - free.memory_bytes
        node.used_gpus = len(gpu_models) - len(tuple(free.gpus))
        node.jobs = len(getattr(free, "running", ()))
        return {SHARED: node}
    nodes: dict[str, NodeView] = {}
    for pool in cfg.pools:
        nodes[pool.name] = NodeView(
            pool.name,
            pool.name,
            pool.cpus if pool.cpus is not None else total_cpus,
            pool.memory if pool.memory is not None else total_mem,
            pool.gpus if pool.gpus is not None else 0,
            model,
            drained=drained,
        )
    sus = _suspensions(free)
    for job in getattr(free, "running", ()):
        held = cfg.pool_named(job.partition)
        n = nodes[held.name if held else cfg.pools[0].name]
        n.used_cpus += 0 if job.backend_id in sus.lent else job.cpus  # a trial on lent cores holds none
        n.used_memory += job.memory_bytes
        n.used_gpus += _whole_gpus(job)
        n.jobs += 1
    for ghost in ghost_views(getattr(free, "running", ()), sus, _node_of(cfg, free)):
        nodes[ghost.parts[0].node].used_cpus += ghost.parts[0].cpus
    return nodes


def _suspensions(free: Any) -> Suspensions:
    return getattr(free, "suspensions", None) or Suspensions()


def _node_of(cfg: PolicyConfig, free: Any) -> dict[str, str]:
    """Running attempt -> the node (pool slice, or the one shared node) it runs on."""
    if not _sliced(cfg):
        return {j.backend_id: SHARED for j in getattr(free, "running", ())}
    out = {}
    for job in getattr(free, "running", ()):
        held = cfg.pool_named(job.partition)
        out[job.backend_id] = held.name if held else cfg.pools[0].name
    return out


def _whole_gpus(job: Any) -> int:
    """Whole devices a queue entry asks for (a shared-GPU job: none)."""
    return 0 if getattr(job, "shared_need", None) is not None else int(job.gpus)


def _device_fit(placed: list[str], queued: list[Any], free: Any) -> list[str]:
    """The placed ids whose devices the backend's ledger gives, in order (see the module doc)."""
    ledger_of = getattr(free, "ledger", None)
    if ledger_of is None:
        return placed
    ledger = ledger_of()
    by_id = {j.backend_id: j for j in queued}
    return [bid for bid in placed if bid not in by_id or take_gpus(by_id[bid], ledger) is not None]


def _pool_of(cfg: PolicyConfig, job: Any, meta: JobMeta | None) -> PoolConfig:
    name = meta.pool if meta else (job.partition or "")
    return cfg.pool_named(name) or cfg.pool_for((job.extra or {}).get("class") or "hpc")


def to_view(cfg: PolicyConfig, job: Any, meta: JobMeta | None) -> JobView:
    """A JobView for a local queue entry."""
    extra = job.extra or {}
    job_class = meta.job_class if meta else str(extra.get("class") or "hpc")
    pool = SHARED if not _sliced(cfg) else _pool_of(cfg, job, meta).name
    trial = meta.trial if meta else False
    gpu = GpuNeed(types=tuple(canonical(t) for t in job.gpu_types)) if job.gpu_types else GpuNeed()
    return JobView(
        job.backend_id,
        meta.principal if meta else str(extra.get("principal") or ""),
        job_class,
        pool,
        job.cpus,
        job.memory_bytes,
        _whole_gpus(job),
        float(job.walltime_seconds or 24 * 3600),
        job.queued_at,
        meta.group if meta else "",
        trial,
        gpu,
        shared_gpu=getattr(job, "shared_need", None) is not None,
    )


_AGENT_FIELDS = ("agent_cores", "agent_max_cores", "agent_lane_after", "agent_fill")


def _shared_cfg(cfg: PolicyConfig) -> PolicyConfig:
    if _sliced(cfg):
        return cfg
    # one configured pool: its agent lane and slice hold on the shared machine too
    agent = {k: getattr(cfg.pools[0], k) for k in _AGENT_FIELDS} if len(cfg.pools) == 1 else {}
    return cfg.model_copy(update={"pools": [PoolConfig(name=SHARED, allocation="pack", **agent)], "borrow": []})


def make_picker(
    get_cfg: Callable[[], PolicyConfig],
    meta: Mapping[int, JobMeta],
    shares: FairshareLedger | None,
    hour_of: Callable[[float], float],
    drained: Callable[[], bool],
) -> Callable[[list[Any], Any, float], list[str] | Picks]:
    """A `pick(queued, free, now) -> [backend ids] | Picks` for the local backend, reading the live policy."""

    def pick(queued: list[Any], free: Any, now: float) -> list[str] | Picks:
        if drained() or not queued:
            return []
        cfg = get_cfg()
        nodes = build_nodes(cfg, free, False)
        views = [to_view(cfg, j, meta.get(j.job_id)) for j in queued]
        ran = [(r, to_view(cfg, r, meta.get(r.job_id))) for r in getattr(free, "running", ())]
        sus = _suspensions(free)
        running = [running_view(r, v, v.pool, sus) for r, v in ran]  # a view's pool is its node (or the shared one)
        running += ghost_views([r for r, _ in ran], sus, {r.backend_id: v.pool for r, v in ran})
        placements, _ = plan(views, nodes, running, now, hour_of(now), _shared_cfg(cfg), shares)
        starts = _device_fit([p.job_id for p in placements], queued, free)
        rules = cfg.suspend.rules()
        if rules is None:
            return starts
        by_id = {v.id: v for v in views}
        started = set(starts)
        waiting = [v for v in views if v.id not in started]
        memory = free.memory_bytes - sum(by_id[b].memory_bytes for b in starts)
        lends = choose_lends(waiting, ran, sus, rules, now, memory)
        batch = frozenset(b for b in starts if not by_id[b].trial)  # what a trial may suspend later
        return Picks(starts, lends, batch)

    return pick
