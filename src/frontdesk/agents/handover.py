"""Hand-over between a user's sessions in one directory (issue 19): a new session takes the unread reports of
ended ones.

Ended means SessionEnd was seen, or its registered process (pid + start time) is gone; a session whose process
is unknown is left alone. The delivery service calls this at a SessionStart (agents/service.py).
"""

from __future__ import annotations

from frontdesk.agents.model import Session, TurnState
from frontdesk.agents.procinfo import start_time
from frontdesk.agents.store import SessionStore

__all__ = ["adopt_ended", "process_gone"]


def process_gone(s: Session) -> bool:
    """Whether the session's registered process (pid + start time) no longer runs."""
    pid, start = s.reach.get("pid"), s.reach.get("pid_start")
    if pid is None or start is None:
        return False
    return bool(start_time(pid) != start)


def adopt_ended(store: SessionStore, s: Session) -> str | None:
    """Move the unread reports of `s`'s user's ended sessions in its directory to `s`; a line for the model
    naming where they came from, None when nothing moved."""
    if not s.cwd:
        return None
    moved: list[tuple[str, list[int]]] = []
    for old in store.with_unread_in(s.user, s.cwd, s.id):
        if old.turn_state is not TurnState.ENDED and not process_gone(old):
            continue
        jobs = store.move_unread(s.user, old.id, s.id)
        if jobs:
            store.note(old.key, None, f"session ended: jobs {', '.join(map(str, jobs))} handed to {s.id}")
            moved.append((old.id, jobs))
    if not moved:
        return None
    names = "; ".join(f"{sid} (jobs {', '.join(map(str, jobs))})" for sid, jobs in moved)
    head = "[frontdesk] Reports below include jobs submitted by an earlier session in this project"
    return f"{head} that has ended: {names}."
