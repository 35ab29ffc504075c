"""The shepherd's GPU watch: usage samples of the job's devices, and the memory a shared-GPU job may use.

Stdlib only (the shepherd starts fast). Every few seconds it reads the devices' utilisation and memory; for a
shared-GPU job (`gpu_memory_limit` in launch.json), every second, which processes hold device memory, and
sums those of the job's own process tree: a job over what it asked is ended as OUT_OF_MEMORY with a GPU
cause. A whole-GPU job's processes are looked for on every other device (every 2 s): one found on a GPU it was
not given (a job that reset CUDA_VISIBLE_DEVICES) ends it the same way, the cause naming the device and the rule;
the device's holder is not touched. A job that asked no GPU, on a machine with GPUs, is held to none: the gateway
lists every device's processes once every 2 s for all such jobs (local/gpupoll.py, into `gpu_apps` of
launch.json) and the shepherd ends the job whose process is listed, the cause naming the device.
It reads NVML in-process (nvml.py, ctypes) when libnvidia-ml loads, and runs nvidia-smi (`--query-gpu`,
`--query-compute-apps=pid,used_memory[,gpu_uuid]`) otherwise or once an NVML call fails. Processes in
another PID namespace (containers) are not seen by pid; such a site caps shared jobs with MPS instead
(`[local] mps`).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Collection, Iterator
from typing import Any

__all__ = [
    "APPS_STALE",
    "GpuWatch",
    "csv_rows",
    "elsewhere_message",
    "gib",
    "noask_message",
    "over_message",
    "parse_apps_by_gpu",
    "parse_compute_apps",
    "parse_gpu_sample",
]

MiB = 1024 * 1024


def csv_rows(text: str, width: int) -> Iterator[list[str]]:
    """The fields (stripped) of each line of nvidia-smi's `--format=csv,noheader,nounits` output that has `width`
    of them and starts with a number: headers, blank lines and warnings are passed over."""
    for line in text.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) == width and fields[0].isdigit():
            yield fields


def parse_gpu_sample(text: str) -> list[tuple[int, float, int]]:
    """(index, utilisation %, memory used bytes) per line of
    `nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv,noheader,nounits`."""
    out = []
    for index, util, used in csv_rows(text, 3):
        try:
            out.append((int(index), float(util), int(float(used) * MiB)))
        except ValueError:
            continue  # "[N/A]" on some boards
    return out


def parse_compute_apps(text: str) -> dict[int, int]:
    """pid -> device memory bytes (summed over devices) from
    `nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits`."""
    out: dict[int, int] = {}
    for pid, used in csv_rows(text, 2):
        try:
            out[int(pid)] = out.get(int(pid), 0) + int(float(used) * MiB)
        except ValueError:
            continue  # "[N/A]" (no permission to see another user's usage)
    return out


def parse_apps_by_gpu(text: str) -> list[tuple[int, int, str]]:
    """(pid, device memory bytes, GPU uuid) per line of
    `nvidia-smi --query-compute-apps=pid,used_memory,gpu_uuid --format=csv,noheader,nounits`."""
    out = []
    for pid, used, uuid in csv_rows(text, 3):
        try:
            out.append((int(pid), int(float(used) * MiB), uuid))
        except ValueError:
            out.append((int(pid), 0, uuid))  # "[N/A]": the process is there, its figure hidden
    return out


def gib(n: int) -> str:
    """Bytes as GiB with one decimal, a whole number without it (`23.1 GiB`, `20 GiB`)."""
    value = round(n / 1024**3, 1)
    return f"{value:g} GiB" if value.is_integer() else f"{value:.1f} GiB"


def over_message(used: int, limit: int) -> str:
    """The cause of a shared-GPU job ended for its device memory."""
    return f"GPU memory {gib(used)} over the {gib(limit)} asked"


def elsewhere_message(device: int, used: int, given: Collection[str]) -> str:
    """The cause of a whole-GPU job ended for using a device it was not given."""
    return (
        f"GPU {device} used ({gib(used)}) but not given to this job (given: GPU {','.join(given)}); "
        "a job uses only the GPUs it was given"
    )


def noask_message(device: int, used: int) -> str:
    """The cause of a job that asked no GPU ended for using one."""
    return f"GPU {device} used ({gib(used)}) by a job that asked no GPU; a job uses only the GPUs it was given"


APPS_STALE = 10.0
"""Seconds after which the gateway's list of GPU processes is not trusted (a gateway gone: pids reused)."""


def _load_nvml() -> Any:
    from frontdesk.backends.nvml import Nvml

    return Nvml.load()


class GpuWatch:
    """Samples the job's GPUs (NVML, else nvidia-smi): mean utilisation, peak memory, and a shared job's overrun."""

    EVERY = 2.0
    EVERY_LIMITED = 1.0

    def __init__(
        self, devices: str, limit: int | None = None, nvml: bool = True, apps: str | None = None, every: bool = False
    ) -> None:
        self.ids = [d for d in devices.split(",") if d.strip().isdigit()]
        on = bool(self.ids) or every  # every: the gateway's one reader of all devices (apps_elsewhere)
        self.nvml = _load_nvml() if on and nvml else None
        self.tool = shutil.which("nvidia-smi") if on else None
        self.apps = apps if not self.ids else None
        """A job that asked no GPU: the gateway's list of processes on GPUs (gpupoll.py), read when it changes."""
        self.apps_seen = 0.0
        self.limit = limit
        self.utils: list[float] = []
        self.peak_mem = 0
        self.job_peak = 0
        self.next_at = 0.0
        self.uuids: dict[str, int] | None = None
        """nvidia-smi's GPU uuid -> index (read once), to tell a process's device."""

    def _query(self, args: list[str]) -> str | None:
        from frontdesk import proc
        from frontdesk.errors import FrontdeskError

        assert self.tool is not None
        try:
            return proc.run([self.tool, *args, "--format=csv,noheader,nounits"], timeout=5).stdout
        except FrontdeskError:
            self.tool = None  # a broken driver must not cost every sample a timeout
            return None

    def sample(self, now: float, tree: Collection[int] = ()) -> str | None:
        """Take a sample when one is due; the overrun message when a shared job uses more than it asked."""
        if self.apps:
            return self._unasked(now, set(tree))
        if not (self.nvml or self.tool) or now < self.next_at:
            return None
        self.next_at = now + (self.EVERY_LIMITED if self.limit else self.EVERY)
        rows, apps = self._read_nvml() if self.nvml else self._read_smi()
        if rows:
            self.utils.append(sum(r[1] for r in rows) / len(rows))
            self.peak_mem = max(self.peak_mem, sum(r[2] for r in rows))
        if not self.limit:
            return self._elsewhere(set(tree))
        if apps is None:
            return None
        used = sum(mem for pid, mem in apps.items() if pid in tree)
        self.job_peak = max(self.job_peak, used)
        return over_message(used, self.limit) if self.limit and used > self.limit else None

    def _read_nvml(self) -> tuple[list[tuple[int, float, int]], dict[int, int] | None]:
        from frontdesk.backends.nvml import NvmlError

        assert self.nvml is not None
        indexes = [int(i) for i in self.ids]
        try:
            if not self.limit:
                return self.nvml.sample(indexes), None
            # every device, as nvidia-smi lists them: a shared job's memory on a GPU it was not given counts too
            every = list(range(self.nvml.count() or 0)) or indexes
            return self.nvml.sample(indexes), self.nvml.processes(every)
        except NvmlError:
            self.nvml = None  # nvidia-smi from now on
            return self._read_smi()

    def _unasked(self, now: float, tree: set[int]) -> str | None:
        """A job that asked no GPU: the first of its processes in the gateway's newest list."""
        if now < self.next_at or self.apps is None:
            return None
        self.next_at = now + self.EVERY
        try:
            at = os.stat(self.apps).st_mtime
            if at == self.apps_seen or now - at > APPS_STALE:
                return None
            self.apps_seen = at
            with open(self.apps, "rb") as fh:
                rows = json.loads(fh.read(1 << 20))["apps"]
            found = [(int(d), int(pid), int(used)) for d, pid, used in rows]
        except (OSError, ValueError, KeyError, TypeError):
            return None  # no list yet, or one being replaced: the next one is read
        return next((noask_message(d, used) for d, pid, used in found if pid in tree), None)

    def apps_elsewhere(self) -> list[tuple[int, int, int]]:
        """(device, pid, bytes) of the processes on devices other than the job's (every device when it has none)."""
        from frontdesk.backends.nvml import NvmlError

        if self.nvml is not None:
            try:
                others = [i for i in range(self.nvml.count() or 0) if str(i) not in self.ids]
                return [(i, pid, used) for i in others for pid, used in self.nvml.processes([i]).items()]
            except NvmlError:
                self.nvml = None  # nvidia-smi from now on
        return self._smi_elsewhere()

    def _elsewhere(self, tree: set[int]) -> str | None:
        """A whole-GPU job: the first of its processes holding memory on a device it was not given."""
        for device, pid, used in self.apps_elsewhere():
            if pid in tree:
                return elsewhere_message(device, used, self.ids)
        return None

    def _smi_elsewhere(self) -> list[tuple[int, int, int]]:
        """(device, pid, bytes) of processes on devices other than the job's, through nvidia-smi."""
        if self.tool and self.uuids is None:
            self.uuids = {uuid: int(i) for i, uuid in csv_rows(self._query(["--query-gpu=index,uuid"]) or "", 2)}
        if not self.tool or not self.uuids:
            return []
        apps = parse_apps_by_gpu(self._query(["--query-compute-apps=pid,used_memory,gpu_uuid"]) or "")
        devices = [(self.uuids.get(uuid), pid, used) for pid, used, uuid in apps]
        return [(d, pid, used) for d, pid, used in devices if d is not None and str(d) not in self.ids]

    def _read_smi(self) -> tuple[list[tuple[int, float, int]], dict[int, int] | None]:
        if not self.tool:
            return [], None
        text = self._query(["--query-gpu=index,utilization.gpu,memory.used", "-i", ",".join(self.ids)])
        rows = parse_gpu_sample(text or "")
        if not self.limit or not self.tool:
            return rows, None
        return rows, parse_compute_apps(self._query(["--query-compute-apps=pid,used_memory"]) or "")

    def result(self) -> dict[str, Any]:
        """Usage figures for result.json (a shared job's peak is its own processes', not the device's)."""
        if not self.utils:
            return {}
        peak = self.job_peak if self.limit else self.peak_mem
        return {"gpu_util_percent": round(sum(self.utils) / len(self.utils), 1), "gpu_mem_peak_bytes": peak}
