"""The hooks channel: hand a batch to a harness hook that is parked on the gateway (pull).

The Stop hook (sync, end of a turn) and the asyncRewake hook (background, idle session) long-poll
`POST /v1/sessions/{id}/wait`; each parks a `Waiter` here. Delivering resolves the waiter's future; the
hook prints the report for the harness and acknowledges, which advances the session's cursor. A hook
that dies before acknowledging lets the lease run out, and the batch is delivered again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from frontdesk.agents.model import AgentSettings, Session, SessionKey, TurnState

__all__ = ["HooksChannel", "Waiter"]


@dataclass
class Waiter:
    """A hook process waiting for this session's reports."""

    role: str  # "stop" (the turn is ending) or "rewake" (background, wakes an idle session)
    idle_only: bool
    future: asyncio.Future[dict[str, Any]] = field(repr=False)


class HooksChannel:
    """Pull delivery through parked Stop / asyncRewake hooks."""

    name = "hooks"
    confirms_later = True

    def __init__(self, settings: AgentSettings, **_: Any) -> None:
        self.settings = settings
        self.waiters: dict[SessionKey, list[Waiter]] = {}  # by (user, id): another user's same id is not this

    def park(self, key: SessionKey, waiter: Waiter) -> None:
        """Add a waiter; a newer rewake waiter supersedes older ones (one background hook per session)."""
        lst = self.waiters.setdefault(key, [])
        if waiter.role == "rewake":
            for old in [w for w in lst if w.role == "rewake"]:
                lst.remove(old)
                if not old.future.done():
                    old.future.set_result({"delivery": None, "superseded": True})
        lst.append(waiter)

    def release(self, key: SessionKey, role: str | None = None) -> int:
        """Let parked hooks of a session go with nothing (no job left to wait for, session ended)."""
        n = 0
        for w in list(self.waiters.get(key, [])):
            if role is None or w.role == role:
                self.unpark(key, w)
                if not w.future.done():
                    w.future.set_result({"delivery": None, "released": True})
                    n += 1
        return n

    def unpark(self, key: SessionKey, waiter: Waiter) -> None:
        """Remove a waiter that timed out or went away."""
        lst = self.waiters.get(key, [])
        if waiter in lst:
            lst.remove(waiter)
        if not lst:
            self.waiters.pop(key, None)

    def _ready(self, session: Session) -> Waiter | None:
        for w in self.waiters.get(session.key, []):
            if w.future.done():
                continue
            if w.idle_only and session.turn_state is not TurnState.IDLE:
                continue
            return w
        return None

    def stop_waiting(self, session: Session) -> bool:
        """Whether a Stop hook holds the end of the turn now (it outranks every other channel)."""
        w = self._ready(session)
        return w is not None and w.role == "stop"

    def available(self, session: Session) -> tuple[bool, str]:
        """Available while a hook waits and, for the background hook, the session is idle."""
        w = self._ready(session)
        if w is not None:
            return True, f"{w.role} hook waiting"
        if self.waiters.get(session.key):
            return False, f"background hook waiting for the turn to end (state {session.turn_state})"
        return False, "no hook waiting (reports wait for the next Stop/SessionStart/UserPromptSubmit hook)"

    async def deliver(self, session: Session, text: str, job_ids: Sequence[int]) -> bool:
        """Resolve the waiting hook's future with the batch."""
        w = self._ready(session)
        if w is None:
            return False
        self.unpark(session.key, w)
        w.future.set_result({"delivery": True, "text": text, "jobs": list(job_ids), "role": w.role})
        return True
