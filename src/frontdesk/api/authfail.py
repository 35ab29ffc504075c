"""Failed authentications, journalled with a bound: a flood of bad tokens cannot grow the journal without end.

A request that gets 401 (a bad or revoked bearer token, a refused MUNGE credential, no credential on TCP) is
an `access.unauthenticated` event with its source address, how it came (`via`) and, for a bearer token, the
token's public id (the first 12 hex digits of its SHA-256, as `frontdesk token list` shows ids; never the
token). Per source address, the first failure of an interval is journalled at once; the others of that
interval are counted and journalled as one event (`count`) when the interval ends, or when the gateway stops.
A source that keeps failing thus costs at most one event per interval. At most `MAX_SOURCES` addresses are
tracked at a time; failures from more share one bucket (source `*`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from frontdesk.config import TableKeys
from frontdesk.errors import ConfigError
from frontdesk.events.models import Event, EventKind
from frontdesk.identity import hash_token

__all__ = ["AuthFailures", "token_id", "MAX_SOURCES", "MIN_TOKEN_CHARS"]

MAX_SOURCES = 1024
MIN_TOKEN_CHARS = 24
"""Shorter values are no token frontdesk makes (maybe a password pasted by mistake): they get no id."""
_MAX_IDS = 5
"""Distinct token ids kept per event."""


def token_id(value: str) -> str | None:
    """The public id of a presented token (its digest's first 12 hex digits), None for a value too short."""
    value = value.strip()
    return hash_token(value)[7:19] if len(value) >= MIN_TOKEN_CHARS else None


@dataclass
class _Window:
    opened: float
    via: str
    reason: str
    pending: int = 0
    ids: list[str] = field(default_factory=list)


class AuthFailures:
    """Counts 401s per source address and journals at most one `access.unauthenticated` per source per interval."""

    KEYS = TableKeys.of("access", "auth_failure_interval")

    def __init__(self, publish: Callable[[Event], Any], interval: float = 60.0) -> None:
        self.publish = publish
        self.interval = interval
        self._windows: dict[str, _Window] = {}

    @classmethod
    def from_section(cls, section: Mapping[str, Any], publish: Callable[[Event], Any]) -> AuthFailures:
        """From `[access] auth_failure_interval` (seconds, default 60)."""
        value = section.get("auth_failure_interval", 60.0)
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 86400:
            raise ConfigError(f"[access].auth_failure_interval: expected seconds in (0, 86400], got {value!r}")
        return cls(publish, float(value))

    def record(self, scope: Mapping[str, Any], headers: Mapping[str, str]) -> None:
        """Count one failed authentication of this request (journalled at once if it opens an interval)."""
        client = scope.get("client")
        source = str(client[0]) if client else "unix"
        scheme, _, value = headers.get("authorization", "").partition(" ")
        via = scheme.lower() if scheme.lower() in ("bearer", "munge") else "none"
        tid = token_id(value) if via == "bearer" else None
        reason = {"bearer": "bad or revoked token", "munge": "MUNGE credential refused"}.get(via, "no credential")
        self.failed(source, via, reason, tid)

    def failed(self, source: str, via: str, reason: str, tid: str | None) -> None:
        """Count one failure from `source`."""
        if source not in self._windows and len(self._windows) >= MAX_SOURCES:
            source = "*"
        window = self._windows.get(source)
        if window is None:
            self._windows[source] = _Window(time.monotonic(), via, reason)
            self._journal(source, 1, via, reason, [tid] if tid else [])
            self._close_later(source)
            return
        window.pending += 1
        window.via, window.reason = via, reason
        if tid and tid not in window.ids and len(window.ids) < _MAX_IDS:
            window.ids.append(tid)

    def _close_later(self, source: str) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop (a unit test): flush() journals what is pending
        loop.call_later(self.interval, self._close, source)

    def _close(self, source: str) -> None:
        """End a source's interval: journal its counted failures as one event, and keep counting if there were."""
        window = self._windows.pop(source, None)
        if window is None or not window.pending:
            return
        self._journal(source, window.pending, window.via, window.reason, window.ids)
        self._windows[source] = _Window(time.monotonic(), window.via, window.reason)
        self._close_later(source)

    def flush(self) -> None:
        """Journal every counted failure now (the gateway is stopping)."""
        for source, window in list(self._windows.items()):
            if window.pending:
                self._journal(source, window.pending, window.via, window.reason, window.ids)
        self._windows.clear()

    def _journal(self, source: str, count: int, via: str, reason: str, ids: list[str]) -> None:
        data = {"source": source, "count": count, "via": via, "reason": reason, "token_ids": list(ids)}
        self.publish(Event(EventKind.ACCESS_UNAUTHENTICATED, data={**data, "interval": self.interval}))
