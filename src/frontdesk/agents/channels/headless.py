"""Headless resume: start one turn of a session that is not running, with the report as its prompt.

Claude Code: `claude -p <text> --resume <id> --output-format json`; Codex: `codex exec resume <id> <text>`.
Only when the site allows the gateway to start agent turns (`[agents] allow_headless = true`), only for a
session whose process is gone, and only as the session's own user (the gateway's user here).
"""

from __future__ import annotations

import getpass
import os
import shutil
from collections.abc import Sequence
from typing import Any

from frontdesk import proc, procid
from frontdesk.agents.harnesses.base import arg_safe
from frontdesk.agents.model import AgentSettings, Harness, Session, TurnState
from frontdesk.errors import FrontdeskError

__all__ = ["HeadlessChannel", "resume_argv", "pid_alive"]


def resume_argv(session: Session, text: str, settings: AgentSettings) -> list[str] | None:
    """The command that resumes `session` with `text` as the next prompt (its harness adapter's; None: none)."""
    from frontdesk.agents.harnesses import for_harness

    adapter = for_harness(str(session.harness))
    if adapter is None:
        return None
    binary = {Harness.CLAUDE_CODE: settings.claude_bin, Harness.CODEX: settings.codex_bin}.get(session.harness)
    return adapter.resume_argv(session.id, text, binary)


def pid_alive(pid: Any, start: Any = None) -> bool:
    """Whether the process runs: with `start` (its recorded start ticks) that very process in this boot, so a
    reused pid is not it (procid); without, any process with this pid (signal 0). 0 and negative pids name
    process groups for kill(2): never a session's process."""
    if isinstance(pid, str) and pid.isascii() and pid.isdigit():
        pid = int(pid)
    if not isinstance(pid, int) or isinstance(pid, bool) or not 0 < pid <= procid.PID_LIMIT:
        return False
    num = pid
    if isinstance(start, int) and not isinstance(start, bool):
        return procid.running(procid.ProcId(num, start, procid.boot_id()))
    try:
        os.kill(num, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class HeadlessChannel:
    """Resumes an ended session in a new headless process."""

    name = "headless"
    confirms_later = False

    def __init__(self, settings: AgentSettings, **_: Any) -> None:
        self.settings = settings
        self._me = getpass.getuser()

    def _gone(self, session: Session) -> bool:
        if session.turn_state is TurnState.ENDED:
            return True
        pid = session.reach.get("pid")
        return pid is not None and not pid_alive(pid, session.reach.get("pid_start"))

    def available(self, session: Session) -> tuple[bool, str]:
        """Allowed by the site, a known harness, its binary present, the session's process gone."""
        if not self.settings.allow_headless:
            return False, "headless resume not allowed here ([agents] allow_headless = false)"
        argv = resume_argv(session, "", self.settings)
        if argv is None:
            return False, f"no headless resume for harness {session.harness}"
        if not arg_safe(session.id):
            return False, "the session id cannot be passed to the harness (a leading '-' or a control character)"
        if shutil.which(argv[0]) is None:
            return False, f"{argv[0]} not found on the gateway's PATH"
        if session.user != self._me:
            return False, f"the gateway runs as {self._me}, not as the session's user {session.user}"
        if not self._gone(session):
            return False, "session process still running"
        return True, f"session ended; would run {argv[0]} resume"

    async def deliver(self, session: Session, text: str, job_ids: Sequence[int]) -> bool:
        """Run one headless turn in the session's directory; True when it exits 0."""
        argv = resume_argv(session, text, self.settings)
        if argv is None:
            return False
        cwd = session.cwd if session.cwd and os.path.isdir(session.cwd) else None
        # issue 8: this turn carries the reports as its prompt; its own hooks would hand them again
        # (UserPromptSubmit) or wait on this very delivery (Stop), so they stand down (hooks.py).
        env = {**os.environ, "FRONTDESK_SESSION": session.id, "FRONTDESK_HOOKS": "off"}
        try:
            res = await proc.run_async(argv, timeout=self.settings.headless_timeout_s, check=False, cwd=cwd, env=env)
        except FrontdeskError:
            return False
        return res.returncode == 0
