"""The tmux fallback: paste the report into the session's pane, only when the agent itself runs there.

Safety first (issue 19, defect 1): a pane outlives the agent in it. Once the agent has exited or
crashed, the pane is the user's shell, and pasting a report that carries a job's output (which may hold
a command line) and pressing Enter would run it. So the channel types only when the pane's foreground
process group is the registered agent process: its pid *and* its start time (recorded when the session
registered, so a recycled pid never passes), on the pane's own terminal. Anything else is declined and
the next channel takes the report. The check runs again right before the paste, and the paste and the
Enter go in one tmux command.

Idle means no new output for `tmux_idle_s` seconds (two captures of the pane compared) and no turn in
progress by the hooks' account. The text starts with `[frontdesk]` and is pasted as one bracketed paste.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import shutil
import stat
from collections.abc import Mapping, Sequence
from typing import Any

from frontdesk import proc
from frontdesk.agents.channels.base import Busy, Declined
from frontdesk.agents.model import AgentSettings, Session, TurnState
from frontdesk.agents.procinfo import proc_stat
from frontdesk.errors import FrontdeskError

__all__ = ["TmuxChannel", "agent_in_foreground", "pasteable"]

_KEYS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def pasteable(text: str) -> str:
    """Text safe to paste as keystrokes: control characters (ESC ending a bracketed paste early, CR, ^C) shown as
    `\\xNN`; line breaks and tabs kept. Whatever a report holds, it is never typed as keys into the agent."""
    return _KEYS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _agent(reach: Mapping[str, Any]) -> tuple[int, int] | None:
    pid, start = reach.get("pid"), reach.get("pid_start")
    if isinstance(pid, int) and isinstance(start, int) and not isinstance(pid, bool):
        return pid, start
    return None


def _user_of(session: Session) -> tuple[int, int] | None:
    """The (uid, gid) of the session's Unix user; None when its principal is no user here."""
    import pwd

    try:
        pw = pwd.getpwnam(session.user)
    except KeyError:
        return None
    return pw.pw_uid, pw.pw_gid


def owned_by_the_user(session: Session) -> tuple[bool, str]:
    """Whether the tmux server's socket and the agent process are the session's user's own: a submission names
    both itself, and another user's pane (their shell) must never be typed into."""
    who = _user_of(session)
    if who is None:
        return False, f"{session.user} is no Unix user here: no pane of theirs to type into"
    try:
        sock = os.lstat(str(session.reach.get("tmux_socket")))
        agent = os.stat(f"/proc/{int(session.reach.get('pid') or 0)}")
    except (OSError, ValueError):
        return False, "tmux server or agent process is gone"
    if not stat.S_ISSOCK(sock.st_mode) or sock.st_uid != who[0]:
        return False, f"the tmux socket is not {session.user}'s: never typed into"
    if agent.st_uid != who[0]:
        return False, f"the agent process is not {session.user}'s: never typed into"
    return True, "the pane is the session user's"


def agent_alive(reach: Mapping[str, Any]) -> tuple[bool, str]:
    """Whether the registered agent process (pid + start time) still runs."""
    agent = _agent(reach)
    if agent is None:
        return False, "agent process not registered (pid and start time): tmux never types into an unverified pane"
    st = proc_stat(agent[0])
    if st is None:
        return False, f"agent process {agent[0]} is gone"
    if st.start != agent[1]:
        return False, f"pid {agent[0]} now names another process"
    return True, f"agent process {agent[0]}"


def agent_in_foreground(pane_pid: int, reach: Mapping[str, Any]) -> tuple[bool, str]:
    """Whether the pane's foreground process group is the registered agent's, on the pane's terminal."""
    ok, why = agent_alive(reach)
    if not ok:
        return False, why
    agent = _agent(reach)
    assert agent is not None
    st, pane = proc_stat(agent[0]), proc_stat(pane_pid)
    if st is None or pane is None:
        return False, "agent or pane process gone"
    if pane.tty_nr == 0 or st.tty_nr != pane.tty_nr:
        return False, f"agent process {agent[0]} does not run on this pane's terminal"
    if pane.tpgid != st.pgrp:
        return False, f"the pane's foreground is another process (group {pane.tpgid}), not the agent"
    return True, "agent in the pane's foreground"


class TmuxChannel:
    """Types into a registered tmux pane whose foreground is the registered agent process."""

    name = "tmux"
    confirms_later = False

    def __init__(self, settings: AgentSettings, **_: Any) -> None:
        self.settings = settings

    def _base(self, session: Session) -> list[str] | None:
        pane = session.reach.get("tmux_pane")
        sock = session.reach.get("tmux_socket")
        who = _user_of(session)
        if not pane or not sock or who is None:
            return None
        tmux = [self.settings.tmux_bin, "-S", str(sock)]
        if os.geteuid() != 0 or who[0] == 0:
            return tmux
        # a root gateway never runs a tmux client itself: the server at the socket may tell its client to
        # run a command (tmux's exec message), so the client is the session's user, with a clean environment
        drop = ["setpriv", f"--reuid={who[0]}", f"--regid={who[1]}", "--init-groups", "--", "env", "-i"]
        return [*drop, f"PATH={os.environ.get('PATH') or '/usr/bin:/bin'}", "LANG=C.UTF-8", *tmux]

    def available(self, session: Session) -> tuple[bool, str]:
        """A pane and its server registered, the session not ended, its agent process still alive."""
        base = self._base(session)
        if base is None:
            return False, "no tmux pane registered"
        if session.turn_state is TurnState.ENDED:
            return False, "session ended: never types into what the pane runs now"
        if shutil.which(self.settings.tmux_bin) is None:
            return False, "tmux not installed on the gateway host"
        if not os.path.exists(str(session.reach["tmux_socket"])):
            return False, "tmux server is gone"
        ok, why = agent_alive(session.reach)
        if not ok:
            return False, why
        ok, why = owned_by_the_user(session)
        if not ok:
            return False, why
        if session.turn_state in (TurnState.IN_TURN, TurnState.STOPPING):
            return True, "pane registered (waits for the turn to end)"
        return True, f"pane {session.reach['tmux_pane']} registered ({why})"

    async def _snapshot(self, base: list[str], pane: str) -> str:
        res = await proc.run_async([*base, "capture-pane", "-p", "-t", pane], timeout=5)
        return hashlib.sha256(res.stdout.encode()).hexdigest()

    async def _verify(self, base: list[str], pane: str, session: Session) -> None:
        """Raise Declined unless the agent is the pane's foreground process now."""
        res = await proc.run_async([*base, "display-message", "-p", "-t", pane, "#{pane_pid}"], timeout=5)
        out = res.stdout.strip()
        if not out.isdigit():
            raise Declined(f"pane {pane} not found")
        ok, why = agent_in_foreground(int(out), session.reach)
        if not ok:
            raise Declined(why)

    async def deliver(self, session: Session, text: str, job_ids: Sequence[int]) -> bool:
        """Check the pane runs the agent, wait for it to be quiet, paste and press Enter in one command."""
        base = self._base(session)
        if base is None:
            return False
        if session.turn_state in (TurnState.IN_TURN, TurnState.STOPPING):
            raise Busy("turn in progress")
        pane = str(session.reach["tmux_pane"])
        ok, why = owned_by_the_user(session)
        if not ok:
            raise Declined(why)
        try:
            await self._verify(base, pane, session)
            before = await self._snapshot(base, pane)
            await asyncio.sleep(self.settings.tmux_idle_s)
            if await self._snapshot(base, pane) != before:
                raise Busy("pane has fresh output")
            buf = f"frontdesk-{os.getpid()}-{job_ids[0] if job_ids else 0}"
            await proc.run_async([*base, "set-buffer", "-b", buf, "--", pasteable(text)], timeout=5)
            await self._verify(base, pane, session)  # again, right before typing
            paste = ["paste-buffer", "-d", "-p", "-b", buf, "-t", pane, ";", "send-keys", "-t", pane, "Enter"]
            await proc.run_async([*base, *paste], timeout=5)
        except FrontdeskError:
            return False
        return True
