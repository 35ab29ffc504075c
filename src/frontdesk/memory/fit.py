"""Which partition would fit: the part of a failure's advice that names where to resubmit. Pure.

A job that ran out of memory may need more than any node of its partition has; one that ran out of time may
need more than its partition's MaxTime; one that found no GPU ran where there are none. The backend's
inventory describes each partition (Slurm: `scontrol show partition` joined with its nodes: the largest node's
memory and cores, MaxTime, GPU types); this module says whether the job's own partition can hold what the
advice asks for, and if not, which partitions can. The embedded backend has no partitions: no advice.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from frontdesk.spec.units import format_bytes, format_duration

__all__ = ["Need", "Shape", "advise", "shapes"]


@dataclass(frozen=True)
class Shape:
    """One partition as far as fitting goes (None: not known, or unlimited for time)."""

    name: str
    max_node_memory_bytes: int | None
    max_time_s: float | None
    gpu_types: tuple[str, ...]
    up: bool = True
    default: bool = False


@dataclass(frozen=True)
class Need:
    """What the advice asks for: memory per node, walltime, GPUs."""

    memory_bytes: int | None = None
    walltime_s: float | None = None
    gpus: bool = False


def shapes(pools: Iterable[Mapping[str, object]]) -> list[Shape]:
    """Shapes from the backend's inventory pools; pools without a partition shape are skipped."""
    out = []
    for pool in pools:
        name, mem, wall = pool.get("name"), pool.get("max_node_memory_bytes"), pool.get("max_time_s")
        if not isinstance(name, str) or "max_node_memory_bytes" not in pool:
            continue
        gpu_types = pool.get("gpu_types")
        out.append(
            Shape(
                name,
                int(mem) if isinstance(mem, int | float) and mem > 0 else None,
                float(wall) if isinstance(wall, int | float) else None,
                tuple(str(t) for t in gpu_types) if isinstance(gpu_types, list | tuple) else (),
                str(pool.get("state") or "UP").upper() == "UP",
                pool.get("default") is True,
            )
        )
    return out


def _fits(shape: Shape, need: Need) -> bool:
    if not shape.up:
        return False
    if (
        need.memory_bytes
        and shape.max_node_memory_bytes is not None
        and need.memory_bytes > shape.max_node_memory_bytes
    ):
        return False
    if need.walltime_s and shape.max_time_s is not None and need.walltime_s > shape.max_time_s:
        return False
    return not (need.gpus and not shape.gpu_types)


def _why_not(shape: Shape, need: Need) -> str:
    if (
        need.memory_bytes
        and shape.max_node_memory_bytes is not None
        and need.memory_bytes > shape.max_node_memory_bytes
    ):
        return f"partition {shape.name}'s nodes have at most {format_bytes(shape.max_node_memory_bytes)}"
    if need.walltime_s and shape.max_time_s is not None and need.walltime_s > shape.max_time_s:
        return f"partition {shape.name} allows at most {format_duration(shape.max_time_s)}"
    return f"partition {shape.name} has no GPU"


def _offer(shape: Shape, need: Need) -> str:
    if need.gpus:
        return f"--partition {shape.name} ({', '.join(shape.gpu_types)})"
    if need.memory_bytes and shape.max_node_memory_bytes:
        return f"--partition {shape.name} (nodes up to {format_bytes(shape.max_node_memory_bytes)})"
    if need.walltime_s:
        limit = "no limit" if shape.max_time_s is None else f"up to {format_duration(shape.max_time_s)}"
        return f"--partition {shape.name} ({limit})"
    return f"--partition {shape.name}"


def advise(partition: str | None, need: Need, known: Iterable[Shape]) -> str | None:
    """None when the job's partition (the default one when None) can hold `need`, or nothing is known; else one
    sentence naming the partitions that can (at most three), or saying that none can."""
    table = list(known)
    current = next((s for s in table if (s.name == partition if partition else s.default)), None)
    if current is None or _fits(current, need):
        return None
    others = [s for s in table if s.name != current.name and _fits(s, need)][:3]
    if not others:
        return f"{_why_not(current, need)} and no other partition fits either"
    return f"{_why_not(current, need)}: use {' or '.join(_offer(s, need) for s in others)}"
