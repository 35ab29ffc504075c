"""The in-process bus: fans stored events out to subscribers and wakes waiters.

Publishing happens on the event-loop thread after the event is stored. A subscriber that raises is
logged and skipped: one broken sink never fails a job.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from frontdesk.events.models import Event
from frontdesk.events.waiters import Waiters

__all__ = ["Bus"]

log = logging.getLogger("frontdesk.events")


class Bus:
    """Subscribers get every event; `waiters` wakes the long-polls of the event's job; `changed` anyone else."""

    def __init__(self) -> None:
        self._subscribers: list[Callable[[Event], None]] = []
        self._changed: asyncio.Condition | None = None
        self.waiters = Waiters()

    @property
    def changed(self) -> asyncio.Condition:
        """A condition notified after every published event (created on the running loop)."""
        if self._changed is None:
            self._changed = asyncio.Condition()
        return self._changed

    def subscribe(self, callback: Callable[[Event], None]) -> Callable[[], None]:
        """Add a subscriber; returns a function that removes it."""
        self._subscribers.append(callback)
        return lambda: self._subscribers.remove(callback) if callback in self._subscribers else None

    def fanout(self, event: Event) -> None:
        """Hand a stored event to every subscriber, then wake waiters."""
        for callback in list(self._subscribers):
            try:
                callback(event)
            except Exception:  # a sink must never break the gateway
                log.exception("event subscriber %r failed on %s", callback, event.kind)
        if event.job_id is not None:
            self.waiters.wake(event.job_id)
        cond = self._changed
        if cond is None:  # nobody ever asked for the condition, so nobody waits on it: no task per event
            return

        async def _notify() -> None:
            async with cond:
                cond.notify_all()

        asyncio.get_running_loop().create_task(_notify())
