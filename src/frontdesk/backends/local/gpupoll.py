"""One GPU read for every job that asked no GPU: the gateway lists the processes on its devices every 2 s.

A job with `gpus: 0` sees no device (CUDA_VISIBLE_DEVICES empty), but a process that resets the variable can
still fill a device another job holds. On a machine whose GPUs the gateway knows (nvidia-smi found them), the
backend runs this poll while such a job runs: one NVML or nvidia-smi read per tick for all of them, written to
`gpu-apps.json` ({at, apps: [[device, pid, bytes], ...]}); each job's shepherd reads that file when it changes
and ends the job whose process is listed (gpuwatch.py). A CPU-only machine starts no poll and writes nothing.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from frontdesk.backends.gpuwatch import GpuWatch
from frontdesk.backends.shepherd import write_json
from frontdesk.tasks import cancel_and_wait

__all__ = ["GpuPoll"]

log = logging.getLogger("frontdesk.local")


class GpuPoll:
    """The gateway's shared read of the processes on every GPU, for the jobs that asked none."""

    EVERY = 2.0

    def __init__(self, path: Path, gpus: Sequence[Mapping[str, Any]], running: Mapping[str, Any]) -> None:
        self.path = path
        self.real = any(g.get("model") != "virtual" for g in gpus)
        """Devices nvidia-smi reported ([local] gpus = N alone declares virtual ones: nothing to read)."""
        self.running = running
        """The backend's running attempts (each with its `holds`): polled while one holds no device."""
        self.reads = 0
        self._task: asyncio.Task[None] | None = None

    def file_for(self, holds: Sequence[Any]) -> str | None:
        """The list a job's shepherd reads: for a job given no device, on a machine with GPUs."""
        return str(self.path) if self.real and not holds else None

    def start(self) -> None:
        """Run the poll (only where GPUs exist)."""
        if self.real:
            self._task = asyncio.get_running_loop().create_task(self._loop())

    async def stop(self) -> None:
        """Stop polling."""
        await cancel_and_wait(self._task)

    async def _loop(self) -> None:
        watch = GpuWatch("", every=True)
        while True:
            if any(not run.holds for run in self.running.values()):
                try:  # off the event loop: nvidia-smi may take seconds
                    found = await asyncio.to_thread(watch.apps_elsewhere)
                    self.reads += 1
                    write_json(self.path, {"at": time.time(), "apps": [list(row) for row in found]})
                except Exception:
                    log.exception("reading the GPUs' processes failed")
            await asyncio.sleep(self.EVERY)
