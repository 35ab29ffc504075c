"""GPU memory and utilisation read straight from NVML (libnvidia-ml.so.1) through ctypes: no process per sample.

The shepherd's GPU watch (gpuwatch.py) uses this when the library loads and initialises, and nvidia-smi
otherwise (or after any NVML call fails). Only the calls frontdesk needs, each checked for its return code:
nvmlInit_v2, nvmlDeviceGetHandleByIndex_v2, nvmlDeviceGetUtilizationRates, nvmlDeviceGetMemoryInfo and
nvmlDeviceGetComputeRunningProcesses (the _v3, _v2 or first version, whichever the driver has; the first
has a shorter record). `FRONTDESK_NVML_LIB` names another library (a site's path, or a test's stand-in).
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Sequence

__all__ = ["Nvml", "NvmlError"]

_SUCCESS = 0
_INSUFFICIENT_SIZE = 7
_NOT_AVAILABLE = 0xFFFFFFFFFFFFFFFF
"""NVML_VALUE_NOT_AVAILABLE: a process's memory the caller may not see."""


class NvmlError(Exception):
    """An NVML call returned an error code (the watch falls back to nvidia-smi)."""


class _Memory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


class _Utilization(ctypes.Structure):
    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]


class _ProcessV1(ctypes.Structure):
    _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong)]


class _ProcessV2(ctypes.Structure):
    _fields_ = [
        ("pid", ctypes.c_uint),
        ("usedGpuMemory", ctypes.c_ulonglong),
        ("gpuInstanceId", ctypes.c_uint),
        ("computeInstanceId", ctypes.c_uint),
    ]


class Nvml:
    """One initialised NVML library."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self._lib = lib
        self._handles: dict[int, ctypes.c_void_p] = {}
        for name, record in (
            ("nvmlDeviceGetComputeRunningProcesses_v3", _ProcessV2),
            ("nvmlDeviceGetComputeRunningProcesses_v2", _ProcessV2),
            ("nvmlDeviceGetComputeRunningProcesses", _ProcessV1),
        ):
            if hasattr(lib, name):
                self._procs, self._record = getattr(lib, name), record
                break
        else:
            raise NvmlError("no nvmlDeviceGetComputeRunningProcesses in the library")
        self._call("nvmlInit_v2")

    @classmethod
    def load(cls, path: str | None = None) -> Nvml | None:
        """NVML from `path`, FRONTDESK_NVML_LIB or libnvidia-ml.so.1; None when it does not load or initialise."""
        name = path or os.environ.get("FRONTDESK_NVML_LIB") or "libnvidia-ml.so.1"
        try:
            return cls(ctypes.CDLL(name))
        except (OSError, AttributeError, NvmlError):
            return None

    def _call(self, name: str, *args: object) -> None:
        rc = getattr(self._lib, name)(*args)
        if rc != _SUCCESS:
            raise NvmlError(f"{name} returned {rc}")

    def _handle(self, index: int) -> ctypes.c_void_p:
        if index not in self._handles:
            handle = ctypes.c_void_p()
            self._call("nvmlDeviceGetHandleByIndex_v2", ctypes.c_uint(index), ctypes.byref(handle))
            self._handles[index] = handle
        return self._handles[index]

    def count(self) -> int | None:
        """How many devices the driver has (nvmlDeviceGetCount_v2); None where the call is missing or fails."""
        n = ctypes.c_uint(0)
        try:
            self._call("nvmlDeviceGetCount_v2", ctypes.byref(n))
        except (AttributeError, NvmlError):
            return None
        return int(n.value)

    def sample(self, indexes: Sequence[int]) -> list[tuple[int, float, int]]:
        """(index, utilisation %, memory used bytes) per device, as gpuwatch.parse_gpu_sample gives them."""
        out = []
        for index in indexes:
            util, mem = _Utilization(), _Memory()
            self._call("nvmlDeviceGetUtilizationRates", self._handle(index), ctypes.byref(util))
            self._call("nvmlDeviceGetMemoryInfo", self._handle(index), ctypes.byref(mem))
            out.append((index, float(util.gpu), int(mem.used)))
        return out

    def processes(self, indexes: Sequence[int]) -> dict[int, int]:
        """pid → device memory bytes summed over `indexes` (processes whose figure NVML hides are left out)."""
        out: dict[int, int] = {}
        for index in indexes:
            for pid, used in self._device_processes(index):
                if used != _NOT_AVAILABLE:
                    out[pid] = out.get(pid, 0) + used
        return out

    def _device_processes(self, index: int) -> list[tuple[int, int]]:
        size = 16
        for _ in range(4):  # the list can grow between the size answer and the next call
            count = ctypes.c_uint(size)
            records = (self._record * size)()
            rc = self._procs(self._handle(index), ctypes.byref(count), records)
            if rc == _SUCCESS:
                return [(int(r.pid), int(r.usedGpuMemory)) for r in records[: count.value]]
            if rc != _INSUFFICIENT_SIZE:
                raise NvmlError(f"nvmlDeviceGetComputeRunningProcesses returned {rc}")
            size = max(count.value, size) * 2
        raise NvmlError("nvmlDeviceGetComputeRunningProcesses: the process list kept growing")

    def close(self) -> None:
        """nvmlShutdown (errors ignored: the shepherd is ending)."""
        try:
            self._lib.nvmlShutdown()
        except (OSError, AttributeError):
            pass
