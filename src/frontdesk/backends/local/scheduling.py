"""What the embedded backend's schedulers see and decide: queued attempts, free resources, the default pick. Pure."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from frontdesk.backends.gpushare import GpuLedger, Hold, SharedNeed
from frontdesk.backends.local.lending import Picks, Suspensions

__all__ = ["FreeResources", "QueuedJob", "Scheduler", "greedy_pick", "take_gpus"]


@dataclass(frozen=True)
class QueuedJob:
    """A queued attempt as a scheduler sees it."""

    backend_id: str
    job_id: int
    cpus: int
    memory_bytes: int
    gpus: int
    gpu_types: tuple[str, ...]
    walltime_seconds: int | None
    priority: int
    queued_at: float
    partition: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    started_at: float | None = None
    """Set once the attempt runs (schedulers estimate its end from it)."""
    gpu_memory_bytes: int | None = None
    gpu_share: float | None = None

    @property
    def shared_need(self) -> SharedNeed | None:
        """A fractional GPU request (one device shared by memory), or None for whole GPUs."""
        if self.gpu_memory_bytes is None and self.gpu_share is None:
            return None
        return SharedNeed(self.gpu_memory_bytes, self.gpu_share)


@dataclass(frozen=True)
class FreeResources:
    """What is free now, and what is held by whom."""

    cpus: int
    memory_bytes: int
    gpus: tuple[int, ...]
    gpu_models: dict[int, str]
    running: tuple[QueuedJob, ...] = ()
    total_cpus: int = 0
    total_memory_bytes: int = 0
    gpu_memory: dict[int, int] = field(default_factory=dict)
    """Each device's memory (bytes; 0 when unknown)."""
    gpu_holds: tuple[Hold, ...] = ()
    """What running jobs hold: whole devices, or memory on shared ones."""
    suspensions: Suspensions = Suspensions()
    """Suspended jobs and the trials on their cores (`cpus` counts a group's cores as held, its trials' as not)."""

    def ledger(self) -> GpuLedger:
        """A fresh ledger of the devices, to take devices from while picking (a device neither in `gpus`
        nor shared counts as held whole)."""
        held = {h.index for h in self.gpu_holds} | set(self.gpus)
        whole = tuple(Hold(i) for i in self.gpu_models if i not in held)
        return GpuLedger(self.gpu_models, self.gpu_memory, self.gpu_holds + whole)


Scheduler = Callable[[list[QueuedJob], FreeResources, float], list[str] | Picks]
"""A pure function: which queued attempts to start now (`Picks`: and which trials start on lent cores)."""


def take_gpus(job: QueuedJob, ledger: GpuLedger) -> tuple[Hold, ...] | None:
    """The devices a job gets from `ledger` now (taken from it), () for a CPU job, None when none fit."""
    if not job.gpus:
        return ()
    return ledger.take(job.gpus, job.gpu_types, job.shared_need)


def greedy_pick(queued: list[QueuedJob], free: FreeResources, now: float) -> list[str]:
    """The default order: priority, then submission; start each attempt that fits (first fit)."""
    cpus, mem, ledger = free.cpus, free.memory_bytes, free.ledger()
    picked = []
    for job in sorted(queued, key=lambda j: (-j.priority, j.queued_at, j.job_id)):
        if job.cpus <= cpus and job.memory_bytes <= mem and take_gpus(job, ledger) is not None:
            picked.append(job.backend_id)
            cpus -= job.cpus
            mem -= job.memory_bytes
    return picked
