"""GPU devices of one machine as a ledger: whole-GPU jobs take free devices, shared jobs pack by memory.

Pure (no I/O): the embedded backend's greedy picker and its launcher, and the policy's embedded picker
all take devices through `GpuLedger.take`, so they agree on which device a job gets. Rules:
- a whole-GPU job takes devices nobody holds; a shared job never lands on a device a whole job holds,
  nor a whole job on a device where a shared job runs;
- a shared job needs `memory_bytes` (or `share` of the device's memory) on one device, best fit: the
  fullest device that still fits, so partly used devices fill up and whole devices stay free.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["GpuLedger", "Hold", "SharedNeed"]


@dataclass(frozen=True)
class SharedNeed:
    """A fractional request: device memory in bytes, or a share of the device (its memory counts the same)."""

    memory_bytes: int | None = None
    share: float | None = None

    def bytes_on(self, device_memory: int) -> int:
        """The memory this request holds on a device of `device_memory` bytes."""
        if self.memory_bytes is not None:
            return self.memory_bytes
        return math.ceil((self.share or 0.0) * device_memory)

    def percent_on(self, device_memory: int) -> int:
        """The share of the device's compute, in percent (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE)."""
        if self.share is not None:
            frac = self.share
        else:
            frac = (self.memory_bytes or 0) / device_memory if device_memory else 1.0
        return max(1, min(100, math.ceil(frac * 100)))


@dataclass(frozen=True)
class Hold:
    """What one running job holds on one device: the whole device (memory_bytes 0) or a share of its memory."""

    index: int
    memory_bytes: int = 0

    @property
    def whole(self) -> bool:
        """The device is the job's alone."""
        return self.memory_bytes == 0


class GpuLedger:
    """Free devices and free shared memory, updated as jobs take devices."""

    def __init__(self, models: Mapping[int, str], memory: Mapping[int, int], holds: Iterable[Hold]) -> None:
        self.models = dict(models)
        self.memory = dict(memory)
        self.whole_held: set[int] = set()
        self.shared_used: dict[int, int] = {}
        for h in holds:
            if h.whole:
                self.whole_held.add(h.index)
            else:
                self.shared_used[h.index] = self.shared_used.get(h.index, 0) + h.memory_bytes

    def _typed(self, types: Iterable[str]) -> list[int]:
        wanted = {t.lower() for t in types}
        return [i for i in sorted(self.models) if not wanted or self.models[i].lower() in wanted]

    def free_whole(self, types: Iterable[str] = ()) -> list[int]:
        """Devices nobody holds (of the given models, all when none given)."""
        return [i for i in self._typed(types) if i not in self.whole_held and i not in self.shared_used]

    def free_shared(self) -> dict[int, int]:
        """Free memory per device open to shared jobs (devices a whole-GPU job holds are left out)."""
        return {i: self.memory.get(i, 0) - self.shared_used.get(i, 0) for i in self.models if i not in self.whole_held}

    def fit_shared(self, need: SharedNeed, types: Iterable[str] = ()) -> int | None:
        """The device a shared request would get now (best fit), or None."""
        best: tuple[int, int] | None = None
        for i in self._typed(types):
            total = self.memory.get(i, 0)
            if i in self.whole_held or total <= 0:
                continue
            left = total - self.shared_used.get(i, 0) - need.bytes_on(total)
            if left >= 0 and (best is None or (left, i) < best):
                best = (left, i)
        return None if best is None else best[1]

    def take(self, gpus: int, types: Iterable[str] = (), need: SharedNeed | None = None) -> tuple[Hold, ...] | None:
        """Take devices for one job (whole: `gpus` free devices; shared: one device by memory), or None."""
        types = tuple(types)
        if need is not None:
            index = self.fit_shared(need, types)
            if index is None:
                return None
            hold = Hold(index, max(1, need.bytes_on(self.memory.get(index, 0))))
            self.shared_used[index] = self.shared_used.get(index, 0) + hold.memory_bytes
            return (hold,)
        free = self.free_whole(types)
        if gpus > len(free):
            return None
        self.whole_held.update(free[:gpus])
        return tuple(Hold(i) for i in free[:gpus])

    def largest(self, types: Iterable[str] = ()) -> int:
        """The memory of the largest device of the given models (0 when unknown or none)."""
        return max((self.memory.get(i, 0) for i in self._typed(types)), default=0)
