"""Where a GPU job can run on this cluster (pure): a partition that has acceptable GPUs, and how to ask Slurm.

Slurm's `--gres` names one GPU type; a job that accepts several (`type: [h100, a100]`) or any with enough
memory (`min_memory`) asks for untyped `gpu:N` and excludes the GPU nodes of other types instead.
A shared-GPU job (a fraction of one GPU) asks for `shard:N` (Slurm 22.05+ `gres/shard`), N of the site's
`[slurm] shards_per_gpu` (else as the nodes' Gres declare them) in proportion to its share or its memory
over the GPU's (catalog) memory; shards are untyped, so GPU nodes of types the job does not accept are excluded.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from frontdesk.backends.base import BackendJob, Inventory

__all__ = [
    "GpuPlacement",
    "NoGpuNode",
    "expand_hostlist",
    "place_gpus",
    "place_shards",
    "placement_for",
    "shard_count",
    "shards_per_gpu",
]


class NoGpuNode(ValueError):
    """No node of the cluster has GPUs this job accepts."""


@dataclass(frozen=True)
class GpuPlacement:
    """The partition and the #SBATCH GPU request for one job."""

    partition: str | None
    gres: str
    exclude: tuple[str, ...] = ()


def expand_hostlist(expr: str) -> list[str]:
    """`a100n1,cpu[1-3,5]` → ['a100n1', 'cpu1', 'cpu2', 'cpu3', 'cpu5'] (Slurm's hostlist, one bracket level)."""
    out: list[str] = []
    for m in re.finditer(r"([^,\[]+)(?:\[([^\]]*)\])?([^,]*)", expr or ""):
        prefix, ranges, suffix = m.group(1), m.group(2), m.group(3)
        if ranges is None:
            out.append(prefix + suffix)
            continue
        for part in ranges.split(","):
            lo, _, hi = part.partition("-")
            if not lo.isdigit() or (hi and not hi.isdigit()):
                continue
            for n in range(int(lo), int(hi or lo) + 1):
                out.append(f"{prefix}{str(n).zfill(len(lo))}{suffix}")
    return out


def place_gpus(
    inventory: Inventory,
    count: int,
    types: Sequence[str],
    min_memory: int | None,
    partition: str | None,
    memory_of: Callable[[str], int | None],
) -> GpuPlacement:
    """Where `count` GPUs of one of `types` (any when empty) with at least `min_memory` bytes can be had."""
    wanted = {t.lower() for t in types}

    def acceptable(gpu_type: str | None) -> bool:
        if wanted and (gpu_type is None or gpu_type.lower() not in wanted):
            return False
        return not min_memory or (gpu_type is not None and (memory_of(gpu_type) or 0) >= min_memory)

    by_node: dict[str, set[str | None]] = {}
    for gpu in inventory.gpus:
        by_node.setdefault(str(gpu.get("node")), set()).add(gpu.get("type"))
    good = {node for node, kinds in by_node.items() if any(acceptable(k) for k in kinds)}
    if not good:
        need = "/".join(types) or "any type"
        more = f" with at least {min_memory // 2**30} GiB" if min_memory else ""
        raise NoGpuNode(f"no node of this cluster has GPUs of {need}{more}")
    pools = [p for p in inventory.pools if p.get("name")]
    pools.sort(key=lambda p: not p.get("default"))
    members = {str(p["name"]): set(expand_hostlist(str(p.get("nodes") or ""))) for p in pools}
    chosen = partition
    if not partition or not any(members.get(name, set()) & good for name in partition.split(",")):
        chosen = next((name for name, nodes in members.items() if nodes & good), partition)
    nodes = set().union(*(members.get(name, set()) for name in (chosen or "").split(","))) or set(by_node)
    kinds = {k for n in nodes & good for k in by_node[n] if acceptable(k)}
    if len(kinds) == 1 and None not in kinds:
        return GpuPlacement(chosen, f"gpu:{kinds.pop()}:{count}")
    others = sorted(n for n in nodes if n in by_node and n not in good)
    return GpuPlacement(chosen, f"gpu:{count}", tuple(others))


def shards_per_gpu(nodes: Iterable[Mapping[str, str]]) -> int:
    """GPU shards per GPU as `scontrol -o show node` declares them (`Gres=gpu:a100:2,shard:a100:16` → 8);
    the smallest over nodes that have shards, 0 when none has."""
    found = []
    for node in nodes:
        counts = {"gpu": 0, "shard": 0}
        for item in node.get("Gres", "").split(","):
            parts = item.split("(")[0].split(":")
            if parts[0] in counts and len(parts) >= 2 and parts[-1].isdigit():
                counts[parts[0]] += int(parts[-1])
        if counts["gpu"] and counts["shard"]:
            found.append(counts["shard"] // counts["gpu"])
    return min(found, default=0)


def shard_count(job: BackendJob, shards_per_gpu: int, gpu_memory: int | None) -> int:
    """How many of a GPU's `shards_per_gpu` shards a shared-GPU job asks for (its share, or its memory's)."""
    fracs = [job.gpu_share] if job.gpu_share is not None else []
    if job.gpu_memory_bytes is not None:
        if not gpu_memory:
            if not fracs:
                raise NoGpuNode(
                    "gpu.memory cannot be turned into Slurm shards: the GPUs' memory is unknown; give gpus: 0.25"
                )
        elif job.gpu_memory_bytes > gpu_memory:
            raise NoGpuNode(
                f"it asks for {job.gpu_memory_bytes / 2**30:g} GiB of GPU memory; "
                f"these GPUs have {gpu_memory / 2**30:g} GiB"
            )
        else:
            fracs.append(job.gpu_memory_bytes / gpu_memory)
    return max(1, min(shards_per_gpu, math.ceil(max(fracs) * shards_per_gpu - 1e-9)))


def place_shards(
    inventory: Inventory,
    job: BackendJob,
    partition: str | None,
    memory_of: Callable[[str], int | None],
    shards_per_gpu: int,
) -> GpuPlacement:
    """`shard:N` in a partition with GPUs the job accepts, other GPU types excluded (see the module doc)."""
    if shards_per_gpu <= 0:
        raise NoGpuNode("a share of a GPU needs Slurm GPU shards: set [slurm] shards_per_gpu (gres.conf Name=shard)")
    base = place_gpus(inventory, 1, job.gpu_types, None, partition, memory_of)
    wanted = {t.lower() for t in job.gpu_types}
    by_node: dict[str, set[str | None]] = {}
    for gpu in inventory.gpus:
        by_node.setdefault(str(gpu.get("node")), set()).add(gpu.get("type"))
    pool = next((p for p in inventory.pools if p.get("name") == base.partition), None)
    members = set(expand_hostlist(str(pool.get("nodes") or ""))) if pool else set(by_node)
    good = {n for n, kinds in by_node.items() if not wanted or any(k and k.lower() in wanted for k in kinds)}
    exclude = tuple(sorted(n for n in members if n in by_node and n not in good))
    sizes = [memory_of(k) for n in members & good for k in by_node[n] if k]
    gpu_memory = min((m for m in sizes if m), default=None)
    return GpuPlacement(base.partition, f"shard:{shard_count(job, shards_per_gpu, gpu_memory)}", exclude)


def placement_for(
    job: BackendJob, inventory: Inventory, default_partition: str | None, shards_per_gpu: int = 0
) -> GpuPlacement | None:
    """The placement of one attempt (None without GPUs, or on a cluster whose GPUs are not known)."""
    if job.gpus <= 0 or not inventory.gpus:
        return None
    from frontdesk.spec.accelerators import canonical, catalog

    models = catalog()

    def memory_of(gpu_type: str) -> int | None:
        model = models.get(canonical(gpu_type))
        return model.memory_bytes if model else None

    min_memory = getattr(job.extra.get("gpu"), "min_memory", None)
    partition = job.partition or default_partition
    if job.shared_gpu:
        return place_shards(inventory, job, partition, memory_of, shards_per_gpu)
    return place_gpus(inventory, job.gpus, job.gpu_types, min_memory, partition, memory_of)
