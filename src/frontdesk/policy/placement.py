"""Placement of one job on nodes under a pool's allocation rule.

- `whole_node` (training): k idle nodes of one accelerator model, held exclusively; a job that needs less
  than half a node's GPUs is packed instead (whole nodes stay for the jobs that need them).
- `pack` (agent): one node, the fullest that fits (compact packing keeps whole nodes free for others);
  agent jobs count `cpus / cpu_oversubscribe` cores; GPUs and memory are never oversubscribed.
- `spread` (hpc, and the FIFO/EASY baselines): one node when it fits, else the fewest nodes.
Accelerator choice: only eligible models, least scarce first (see catalog.prefer_least_scarce).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence

from frontdesk.policy.model import JobView, NodeView, Part

__all__ = ["place"]

Parts = tuple[tuple[Part, ...], bool]


def place(
    job: JobView,
    nodes: Sequence[NodeView],
    allocation: str,
    oversubscribe: float = 1.0,
    model_rank: Mapping[str, int] | None = None,
) -> Parts | None:
    """(parts, exclusive) for `job` on `nodes`, or None when it does not fit now."""
    cands = [n for n in nodes if not n.drained and not n.exclusive]
    if job.gpus:
        cands = [n for n in cands if n.gpus and (model_rank is None or n.gpu_model in model_rank)]
    elif job.shared_gpu:
        cands = [n for n in cands if n.gpus]  # a share of a GPU: any node with GPUs (the device is the backend's)
    if not cands:
        return None
    rank = model_rank or {}
    # a share of a GPU is packed, like a job that needs few of a node's GPUs
    cpu_only = not job.gpus and not job.shared_gpu
    if allocation == "whole_node" and (job.nodes > 1 or cpu_only or 2 * job.gpus >= min(n.gpus for n in cands)):
        return _whole(job, cands, rank)
    ratio = oversubscribe if job.job_class == "agent" else 1.0
    single = _single(job, cands, rank, ratio)
    if single is not None or (allocation == "pack" and job.nodes <= 1 and _fits_shape(job, cands, ratio)):
        return single
    return _spread(job, cands, rank)


def _fits_shape(job: JobView, cands: Sequence[NodeView], ratio: float) -> bool:
    return any(
        n.cpus * 1.0 >= job.cpus / ratio and n.memory_bytes >= job.memory_bytes and n.gpus >= job.gpus for n in cands
    )


def _single(job: JobView, cands: Sequence[NodeView], rank: Mapping[str, int], ratio: float) -> Parts | None:
    if job.nodes > 1:
        return None
    cost = job.cpus / ratio
    best: NodeView | None = None
    best_key: tuple[int, int, float, str] | None = None
    need_mem, need_gpus = job.memory_bytes, job.gpus
    for n in cands:
        free = n.cpus - n.used_cpus  # the properties, inlined: this loop runs for every node
        if free + 1e-9 < cost or n.memory_bytes - n.used_memory < need_mem or n.gpus - n.used_gpus < need_gpus:
            continue
        # CPU-only jobs keep off GPU nodes when they can; then fullest node first (compact).
        on_gpu = 1 if (not job.gpus and not job.shared_gpu and n.gpus) else 0
        key = (rank.get(n.gpu_model or "", 0), on_gpu, free - cost, n.name)
        if best_key is None or key < best_key:
            best, best_key = n, key
    if best is None:
        return None
    return (Part(best.name, cost, job.memory_bytes, job.gpus),), False


def _whole(job: JobView, cands: Sequence[NodeView], rank: Mapping[str, int]) -> Parts | None:
    groups: dict[tuple[str, int, int], list[NodeView]] = {}
    for n in cands:
        groups.setdefault((n.gpu_model or "", n.cpus, n.gpus), []).append(n)
    for (_model, cpus, gpus), group in sorted(groups.items(), key=lambda kv: (rank.get(kv[0][0], 0), kv[0])):
        shape = group[0]
        k = job.nodes or max(
            1,
            math.ceil(job.gpus / gpus) if gpus else 1,
            math.ceil(job.cpus / cpus),
            math.ceil(job.memory_bytes / shape.memory_bytes) if shape.memory_bytes else 1,
        )
        idle = [n for n in group if n.idle]
        if len(idle) >= k:
            chosen = sorted(idle, key=lambda n: n.name)[:k]
            return tuple(Part(n.name, float(n.cpus), n.memory_bytes, n.gpus) for n in chosen), True
    return None


def _name(n: NodeView) -> str:
    return n.name


def _spread_cores(job: JobView, cands: Sequence[NodeView]) -> Parts | None:
    """`_spread` for a job asking cores only, in one pass: nodes grouped by shape, groups taken in order."""
    groups: dict[tuple[int, float], list[NodeView]] = {}
    total = 0
    for n in cands:
        free = n.cpus - n.used_cpus
        if free >= 1:
            total += int(free)
            shape = (1 if n.gpus else 0, n.used_cpus - n.cpus)
            g = groups.get(shape)
            if g is None:
                groups[shape] = [n]
            else:
                g.append(n)
    if total < job.cpus:
        return None
    parts: list[Part] = []
    rem, k = job.cpus, job.cpus  # each node gives a core or more: the first job.cpus nodes suffice
    for shape in sorted(groups):
        g = groups[shape]
        for n in heapq.nsmallest(k, g, key=_name) if len(g) > k else sorted(g, key=_name):
            if k <= 0 or rem <= 0:
                break
            k -= 1
            if n.memory_bytes - n.used_memory >= 0:
                c = min(rem, int(n.cpus - n.used_cpus))
                parts.append(Part(n.name, float(c), 0, 0))
                rem -= c
        if k <= 0 or rem <= 0:
            break
    if rem > 0 or (job.nodes and len(parts) > job.nodes):
        return None
    return tuple(parts), False


def _spread(job: JobView, cands: Sequence[NodeView], rank: Mapping[str, int]) -> Parts | None:
    if not job.gpus and not job.memory_bytes:
        return _spread_cores(job, cands)
    rem_c, rem_g, rem_m = job.cpus, job.gpus, job.memory_bytes
    mem_per_core = job.memory_bytes / job.cpus if job.cpus else 0.0
    if job.gpus:
        usable = [n for n in cands if n.free_gpus > 0]
        if sum(n.free_gpus for n in usable) < job.gpus:
            return None
        order = sorted(usable, key=lambda n: (rank.get(n.gpu_model or "", 0), -n.free_gpus, n.name))
    else:
        usable = [n for n in cands if n.cpus - n.used_cpus >= 1]
        if sum(int(n.cpus - n.used_cpus) for n in usable) < job.cpus:
            return None
        key = lambda n: (1 if n.gpus else 0, n.used_cpus - n.cpus, n.name)  # noqa: E731
        order = sorted(usable, key=key)  # jobs without memory take _spread_cores
    parts: list[Part] = []
    for n in order:
        if rem_c <= 0 and rem_g <= 0:
            break
        if job.gpus:
            g = min(rem_g, n.free_gpus)
            if g <= 0:
                continue
            c = min(rem_c, math.ceil(job.cpus * g / job.gpus))
        else:
            g, c = 0, min(rem_c, int(n.free_cpus))
        if c <= 0 and g <= 0:
            continue
        m = min(rem_m, math.ceil(c * mem_per_core))
        if n.free_cpus + 1e-9 < c or n.free_memory < m:
            continue
        parts.append(Part(n.name, float(c), m, g))
        rem_c, rem_g, rem_m = rem_c - c, rem_g - g, rem_m - m
    if rem_c > 0 or rem_g > 0:
        return None
    if job.nodes and len(parts) > job.nodes:
        return None
    return tuple(parts), False
