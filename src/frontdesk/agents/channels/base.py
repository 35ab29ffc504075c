"""The delivery-channel seam: how a report batch reaches a session.

A channel is an object with a `name`, `available(session) -> (ok, reason)` (cheap, no I/O that blocks;
the reason is shown by `frontdesk sessions`), and `async deliver(session, text, job_ids) -> bool`.
`deliver` returns True when the text was handed over, False when it failed (the next channel is tried,
and the batch is retried later), or raises `Busy` when the session is reachable this way but not now
(a turn in progress, a pane with fresh output): then no other channel is tried and it is retried soon.
`Declined(reason)` is a refusal found at hand-over time (recorded, and the next channel is tried).
Channels whose hand-over is confirmed later (a hook that acknowledges) set `confirms_later = True`.

The order is data: `[agents] channels` (default: inbox, codex_live, hooks, tmux, headless); names whose
module is not installed are skipped, so adding a channel is one module plus one line in `CHANNEL_PATHS`.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from frontdesk.agents.model import AgentSettings, Session

__all__ = ["Busy", "Channel", "CHANNEL_PATHS", "Declined", "load_channels", "choose"]

log = logging.getLogger("frontdesk.agents")

CHANNEL_PATHS: dict[str, str] = {
    "inbox": "frontdesk.agents.channels.inbox:InboxChannel",
    "codex_live": "frontdesk.agents.channels.codex_live:CodexLiveChannel",  # issue 8
    "hooks": "frontdesk.agents.channels.hooks:HooksChannel",
    "tmux": "frontdesk.agents.channels.tmux:TmuxChannel",
    "headless": "frontdesk.agents.channels.headless:HeadlessChannel",
}


class Busy(Exception):
    """The session can be reached this way, but not now (mid-turn, busy pane): retry the same channel."""


class Declined(Exception):
    """This channel must not deliver (the pane no longer runs the agent): the next channel is tried."""


@runtime_checkable
class Channel(Protocol):
    """One way of putting a report in front of an agent."""

    name: str
    confirms_later: bool

    def available(self, session: Session) -> tuple[bool, str]:
        """Whether this channel can reach the session now, and why (or why not)."""
        ...

    async def deliver(self, session: Session, text: str, job_ids: Sequence[int]) -> bool:
        """Hand `text` (the framed reports of `job_ids`) to the session; True when handed over."""
        ...


def load_channels(settings: AgentSettings, **deps: Any) -> list[Channel]:
    """Instantiate the channels named in `settings.channels`, in that order, skipping absent modules."""
    out: list[Channel] = []
    for name in settings.channels:
        path = CHANNEL_PATHS.get(name)
        if path is None:
            log.warning("unknown delivery channel %r in [agents] channels (known: %s)", name, ", ".join(CHANNEL_PATHS))
            continue
        module_name, _, cls_name = path.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue  # a channel not built (yet)
            raise
        out.append(getattr(module, cls_name)(settings, **deps))
    return out


def choose(channels: Sequence[Channel], session: Session) -> tuple[list[Channel], list[str]]:
    """The channels that can reach the session now, in order, and a reason line per channel."""
    usable: list[Channel] = []
    reasons: list[str] = []
    for ch in channels:
        try:
            ok, why = ch.available(session)
        except Exception as exc:  # a broken channel must not stop the others
            ok, why = False, f"error: {exc}"
        reasons.append(f"{ch.name}: {why}")
        if ok:
            usable.append(ch)
    return usable, reasons
