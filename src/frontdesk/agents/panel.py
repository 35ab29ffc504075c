"""The agents plug-in's table on the gateway's web page: sessions and their unread reports."""

from __future__ import annotations

from typing import TYPE_CHECKING

from frontdesk.agents.store import SessionStore
from frontdesk.plugins import Panel

if TYPE_CHECKING:
    from frontdesk.identity import Caller

__all__ = ["sessions_panel"]

ROWS = 20


def sessions_panel(store: SessionStore, caller: Caller) -> Panel:
    """The caller's own sessions (everyone's for an admin), most recently seen first, with unread counts."""
    sessions = store.list_sessions(None if caller.admin else caller.user)[:ROWS]
    unread = store.unread_counts(s.key for s in sessions)
    rows = tuple(
        (s.id, s.user, str(s.harness), s.cwd or "", str(s.turn_state), str(unread.get(s.key, 0))) for s in sessions
    )
    return Panel("Sessions", ("session", "user", "harness", "directory", "turn", "unread reports"), rows)
