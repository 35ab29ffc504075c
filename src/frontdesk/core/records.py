"""The gateway's sweep of a backend's crash-recovery files (backends with `SweepsRecords`: Slurm's sbatch answers).

A first pass right after the start's recovery, then one every `INTERVAL_S`; each in a worker thread on a read-only
connection of its own (store/settled.py), so neither the start nor the event loop waits on it; the backend bounds
each pass (backends/slurm/sweep.py). A failed pass is logged and the next one tries again.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from frontdesk.backends.base import Backend, SweepsRecords
from frontdesk.store.settled import connect, ended_ids, settled_keys
from frontdesk.tasks import cancel_and_wait

__all__ = ["INTERVAL_S", "RecordSweep"]

log = logging.getLogger("frontdesk.records")

INTERVAL_S = 10.0


class RecordSweep:
    """Runs the backend's record sweep while the gateway runs (nothing for a backend without one)."""

    def __init__(self, db: Path, backend: Backend) -> None:
        self.db = db
        self.backend = backend
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start sweeping (on the running loop), if the backend keeps such files."""
        if isinstance(self.backend, SweepsRecords):
            self._task = asyncio.get_running_loop().create_task(self._run(self.backend))

    async def stop(self) -> None:
        """Stop sweeping (a pass in its thread finishes its unit)."""
        await cancel_and_wait(self._task)

    async def _run(self, backend: SweepsRecords) -> None:
        while True:
            try:
                examined, removed = await asyncio.to_thread(self.once, backend)
                if removed:
                    log.info("records: %d recovery files read, %d no longer needed removed", examined, removed)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("records: a sweep pass failed")
            await asyncio.sleep(INTERVAL_S)

    def once(self, backend: SweepsRecords) -> tuple[int, int]:
        """One pass (in a worker thread): (entries read, units removed)."""
        conn = connect(self.db)
        try:
            name = getattr(self.backend, "name", "")
            return backend.sweep_records(lambda keys: settled_keys(conn, keys), lambda ids: ended_ids(conn, name, ids))
        finally:
            conn.close()
