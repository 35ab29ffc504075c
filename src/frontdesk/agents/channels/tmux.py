"""The tmux fallback: paste the report into the session's pane when the pane is idle.

Idle means no new output for `tmux_idle_s` seconds (two captures of the pane compared) and no turn in
progress by the hooks' account. The text starts with `[frontdesk]`, is pasted as one bracketed paste
(so a multi-line report stays one message in agents that support it), then Enter is sent.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
from collections.abc import Sequence
from typing import Any

from frontdesk import proc
from frontdesk.agents.channels.base import Busy
from frontdesk.agents.model import AgentSettings, Session, TurnState
from frontdesk.errors import FrontdeskError

__all__ = ["TmuxChannel"]


class TmuxChannel:
    """Types into a registered tmux pane."""

    name = "tmux"
    confirms_later = False

    def __init__(self, settings: AgentSettings, **_: Any) -> None:
        self.settings = settings

    def _base(self, session: Session) -> list[str] | None:
        pane = session.reach.get("tmux_pane")
        sock = session.reach.get("tmux_socket")
        if not pane or not sock:
            return None
        return [self.settings.tmux_bin, "-S", str(sock)]

    def available(self, session: Session) -> tuple[bool, str]:
        """Available when a pane and its server socket were registered and the socket exists."""
        base = self._base(session)
        if base is None:
            return False, "no tmux pane registered"
        if shutil.which(self.settings.tmux_bin) is None:
            return False, "tmux not installed on the gateway host"
        if not os.path.exists(str(session.reach["tmux_socket"])):
            return False, "tmux server is gone"
        if session.turn_state in (TurnState.IN_TURN, TurnState.STOPPING):
            return True, "pane registered (waits for the turn to end)"
        return True, f"pane {session.reach['tmux_pane']} registered"

    async def _snapshot(self, base: list[str], pane: str) -> str:
        res = await proc.run_async([*base, "capture-pane", "-p", "-t", pane], timeout=5)
        return hashlib.sha256(res.stdout.encode()).hexdigest()

    async def deliver(self, session: Session, text: str, job_ids: Sequence[int]) -> bool:
        """Wait for a quiet pane, then paste the text and press Enter; Busy when output keeps coming."""
        base = self._base(session)
        if base is None:
            return False
        if session.turn_state in (TurnState.IN_TURN, TurnState.STOPPING):
            raise Busy("turn in progress")
        pane = str(session.reach["tmux_pane"])
        try:
            before = await self._snapshot(base, pane)
            await asyncio.sleep(self.settings.tmux_idle_s)
            if await self._snapshot(base, pane) != before:
                raise Busy("pane has fresh output")
            buf = f"frontdesk-{os.getpid()}-{job_ids[0] if job_ids else 0}"
            await proc.run_async([*base, "set-buffer", "-b", buf, "--", text], timeout=5)
            await proc.run_async([*base, "paste-buffer", "-d", "-p", "-b", buf, "-t", pane], timeout=5)
            await proc.run_async([*base, "send-keys", "-t", pane, "Enter"], timeout=5)
        except FrontdeskError:
            return False
        return True
