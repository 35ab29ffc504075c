"""The in-process bus: fans stored events out to subscribers and wakes waiters.

Publishing happens on the event-loop thread after the event is stored. A subscriber that raises is
logged and skipped: one broken sink never fails a job. While a job's end is being stored (`holding`),
what is handed to `fanout` waits for that end's commit.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager

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
        self._held: list[Event] | None = None

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

    @contextmanager
    def holding(self) -> Iterator[list[Event]]:
        """Hold what `fanout` is handed (events stored inside the caller's transaction: a job's end and what
        plug-ins publish while enriching its report) until that transaction commits; the caller fans them out
        then, and a rollback drops them with their rows. Used synchronously: no other task runs meanwhile."""
        held: list[Event] = []
        self._held = held
        try:
            yield held
        finally:
            self._held = None

    def fanout(self, event: Event) -> None:
        """Hand a stored event to every subscriber, then wake waiters (`holding`: once the caller commits)."""
        if self._held is not None:
            self._held.append(event)
            return
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
