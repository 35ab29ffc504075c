"""How a report will reach a session, in words: the route `frontdesk run` prints and `sessions` shows.

Pure over what the channels say about the session now; no I/O beyond their `available` checks.
"""

from __future__ import annotations

from collections.abc import Sequence

from frontdesk.agents.channels.base import Channel
from frontdesk.agents.model import Session, TurnState

__all__ = ["route_line", "live_channel"]


def live_channel(channels: Sequence[Channel], s: Session) -> Channel | None:
    """The first channel that can wake this session later by itself (inbox, codex_live), or None."""
    for ch in channels:
        if getattr(ch, "live", False) and ch.available(s)[0]:
            return ch
    return None


def route_line(channels: Sequence[Channel], s: Session) -> str:
    """`comes back ...` / `cannot come back ...`: the channel that will carry the next report."""
    if s.turn_state is TurnState.ENDED:
        avail = [ch.name for ch in channels if ch.name == "headless" and ch.available(s)[0]]
        if avail:
            return "comes back by a headless resume of the ended session"
        return "cannot come back to this session (it ended): a new session in this project is offered it"
    live = live_channel(channels, s)
    if live is not None:
        return f"comes back by {live.name} (wakes the session when it is idle)"
    if s.reach.get("hooks_seen"):
        return "comes back by the Stop hook when this turn ends (or at the next prompt)"
    for ch in channels:
        if ch.name == "tmux" and ch.available(s)[0]:
            return f"comes back typed into tmux pane {s.reach.get('tmux_pane')}"
    return (
        "cannot come back by itself (no hooks seen from this session: `frontdesk hooks install`, "
        "`frontdesk doctor`): read it with `frontdesk wait`"
    )
