"""The embedded backend's GPUs: the inventory (nvidia-smi), a job's device environment, and what never fits.

Devices are numbered as nvidia-smi numbers them; a job sees its devices through CUDA_VISIBLE_DEVICES. A shared
job (a fraction of one device) also gets the MPS variables where the site runs the MPS daemon
(`[local] mps = true`, `mps_pipe_directory`), so its compute share and pinned memory are capped by CUDA too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from frontdesk.backends.base import BackendJob
from frontdesk.backends.gpushare import GpuLedger, Hold, SharedNeed

__all__ = ["detect_gpus", "device_views", "gpu_env", "ledger_of", "never_fits_gpu"]

MPS_PIPE_DIRECTORY = "/tmp/nvidia-mps"
"""nvidia-cuda-mps-control's default pipe directory."""


def detect_gpus() -> list[dict[str, Any]]:
    """GPUs seen by nvidia-smi (index, model, memory), or none."""
    from frontdesk import proc
    from frontdesk.errors import FrontdeskError

    try:
        out = proc.run(
            ["nvidia-smi", "--query-gpu=index,name,memory.total", "--format=csv,noheader,nounits"], timeout=10
        ).stdout
    except FrontdeskError:
        return []
    gpus = []
    for line in out.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3 and parts[0].isdigit():
            try:
                mib = float(parts[2])
            except ValueError:
                mib = 0.0  # "[N/A]": the device is listed, its memory unknown (no shared jobs on it)
            gpus.append({"index": int(parts[0]), "model": parts[1], "memory_bytes": int(mib) * 1024**2})
    return gpus


def ledger_of(gpus: Sequence[Mapping[str, Any]], holds: Sequence[Hold]) -> GpuLedger:
    """A ledger over inventory entries ({index, model, memory_bytes}) with `holds` taken."""
    models = {int(g["index"]): str(g.get("model", "")) for g in gpus}
    memory = {int(g["index"]): int(g.get("memory_bytes") or 0) for g in gpus}
    return GpuLedger(models, memory, holds)


def gpu_env(
    holds: Sequence[Hold], need: SharedNeed | None, device_memory: int, local: Mapping[str, Any]
) -> dict[str, str]:
    """CUDA_VISIBLE_DEVICES for the job's devices; for a shared job under MPS, its thread share and memory cap."""
    env = {"CUDA_VISIBLE_DEVICES": ",".join(str(h.index) for h in holds)}
    if need is not None and holds and local.get("mps"):
        env["CUDA_MPS_PIPE_DIRECTORY"] = str(local.get("mps_pipe_directory") or MPS_PIPE_DIRECTORY)
        env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = str(need.percent_on(device_memory))
        env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = (
            f"0={holds[0].memory_bytes // 1024**2}MB"  # the device as the job sees it
        )
    return env


def never_fits_gpu(job: BackendJob, gpus: Sequence[Mapping[str, Any]]) -> str | None:
    """Why a job's GPU request can never be met by these devices, or None."""
    from frontdesk.spec.units import format_bytes

    ledger = ledger_of(gpus, ())
    types = tuple(t.lower() for t in job.gpu_types)
    kind = f" of type {'/'.join(job.gpu_types)}" if job.gpu_types else ""
    usable = ledger.free_whole(types)
    if job.gpus > len(usable):
        return f"it asks for {job.gpus} GPUs{kind} and this host has {len(usable)}"
    if not job.shared_gpu:
        return None
    need = SharedNeed(job.gpu_memory_bytes, job.gpu_share)
    largest = ledger.largest(types)
    if largest <= 0:
        return f"it asks for a share of a GPU{kind} and the memory of this host's GPUs is unknown (nvidia-smi)"
    if ledger.fit_shared(need, types) is None:
        asked = format_bytes(need.bytes_on(largest))
        return f"it asks for {asked} of GPU memory and the largest GPU{kind} here has {format_bytes(largest)}"
    return None


def device_views(gpus: Sequence[Mapping[str, Any]], held: Iterable[tuple[int, str, Hold]]) -> list[dict[str, Any]]:
    """Each device for the cluster view: memory, memory free to shared jobs, its mode and who holds it.

    `held` is (job id, principal, hold) per hold of a running job; `free_bytes` counts what jobs asked, not
    what nvidia-smi sees them use (a shared job is ended when it uses more, see backends/gpuwatch.py)."""
    holds = list(held)
    ledger = ledger_of(gpus, [h for _, _, h in holds])
    free = ledger.free_shared()
    out = []
    for index in sorted(ledger.models):
        mine = [(job, who, h) for job, who, h in holds if h.index == index]
        mode = "free" if not mine else ("whole" if any(h.whole for _, _, h in mine) else "shared")
        out.append(
            {
                "index": index,
                "model": ledger.models[index],
                "memory_bytes": ledger.memory.get(index, 0),
                "free_bytes": free.get(index, 0),
                "mode": mode,
                "holders": [
                    {"job_id": job, "principal": who, "memory_bytes": None if h.whole else h.memory_bytes}
                    for job, who, h in sorted(mine, key=lambda x: x[0])
                ],
            }
        )
    return out
