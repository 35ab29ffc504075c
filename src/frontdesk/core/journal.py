"""The journal's pruner: a background task of the gateway that applies `[journal]` retention now and then.

Each pass runs in a worker thread on its own database connection (store/retention.py), so the event loop never
waits on it; a failed pass is logged and the next one tries again.
"""

from __future__ import annotations

import asyncio
import logging
import threading

from frontdesk.config import Settings
from frontdesk.store.retention import Retention, prune_file
from frontdesk.tasks import cancel_and_wait

__all__ = ["Pruner"]

log = logging.getLogger("frontdesk.journal")

FIRST_PASS_S = 5.0
"""A start's first pass waits this long (the gateway's recovery goes first)."""


class Pruner:
    """Prunes the journal every `interval` while the gateway runs; `[journal]` is validated at construction."""

    def __init__(self, settings: Settings) -> None:
        self.policy = Retention.from_section(settings.section("journal"))
        self.db = settings.db_path
        self._task: asyncio.Task[None] | None = None
        self._halt = threading.Event()  # ends a pass in its thread between two batches

    def start(self) -> None:
        """Start pruning (on the running loop)."""
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        """Stop pruning; a pass in its thread ends after its current batch."""
        self._halt.set()
        await cancel_and_wait(self._task)

    async def _run(self) -> None:
        await asyncio.sleep(min(FIRST_PASS_S, self.policy.interval_s))
        while True:
            try:
                deleted = await asyncio.to_thread(prune_file, self.db, self.policy, self._halt)
                if deleted:
                    log.info("journal: pruned %d events", deleted)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("journal: a pruning pass failed")
            await asyncio.sleep(self.policy.interval_s)
