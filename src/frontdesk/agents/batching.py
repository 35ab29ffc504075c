"""When to wake a session: batch reports that end close together, retry failures with backoff. Pure.

Time is passed in (a fake clock in tests). A batch for a session is due `window` seconds after its last
report arrived, but never later than `max_wait` after its first, so a stream of reports still flushes.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

__all__ = ["Batcher"]

K = TypeVar("K", bound=Hashable)
"""What names a session (the plug-in: (user, id))."""


@dataclass
class _Pending:
    first: float
    last: float
    due: float
    failures: int = 0


@dataclass
class Batcher(Generic[K]):
    """Per-session due times for delivery attempts."""

    window: float = 1.0
    max_wait: float = 5.0
    retry_base: float = 1.0
    retry_max: float = 60.0
    _pending: dict[K, _Pending] = field(default_factory=dict)

    def arrived(self, session: K, now: float) -> float:
        """A report for `session` arrived at `now`; returns when its batch is due."""
        p = self._pending.get(session)
        if p is None:
            p = _Pending(first=now, last=now, due=now + self.window)
        elif p.failures:
            p.last = now
            p.due = min(p.due, now + self.window)
        else:
            p.last = now
            p.due = min(now + self.window, p.first + self.max_wait)
        self._pending[session] = p
        return p.due

    def kick(self, session: K, now: float, settle_from: float | None = None) -> float:
        """Something changed (a hook started waiting): due at once, or when the batch settles."""
        p = self._pending.get(session)
        last = settle_from if settle_from is not None else (p.last if p else now - self.window)
        due = max(now, min(last + self.window, (p.first if p else last) + self.max_wait))
        self._pending[session] = _Pending(first=p.first if p else now, last=p.last if p else last, due=due, failures=0)
        return due

    def due(self, now: float) -> list[K]:
        """Sessions whose batch is due at `now`, oldest first."""
        ready = [(p.due, s) for s, p in self._pending.items() if p.due <= now]
        return [s for _, s in sorted(ready)]

    def next_due(self) -> float | None:
        """The earliest due time, or None when nothing waits."""
        return min((p.due for p in self._pending.values()), default=None)

    def done(self, session: K) -> None:
        """The batch was delivered (or handed to a hook): forget it."""
        self._pending.pop(session, None)

    def park(self, session: K) -> None:
        """No channel can take it now: wait for the next hook (no timer)."""
        self._pending.pop(session, None)

    def failed(self, session: K, now: float) -> float:
        """Every channel failed: retry with exponential backoff; returns the next due time."""
        p = self._pending.get(session) or _Pending(first=now, last=now, due=now)
        p.failures += 1
        p.due = now + min(self.retry_base * 2 ** (p.failures - 1), self.retry_max)
        self._pending[session] = p
        return p.due

    def defer(self, session: K, until: float) -> None:
        """Try again at `until` (a lease running out, a busy pane)."""
        p = self._pending.get(session) or _Pending(first=until, last=until, due=until)
        p.due = until
        self._pending[session] = p

    def failures(self, session: K) -> int:
        """How many consecutive failed attempts this session's batch has had."""
        p = self._pending.get(session)
        return p.failures if p else 0
