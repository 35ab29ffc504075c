"""The harness seam: what frontdesk needs to know about one agent harness, and the shared hook helpers.

A `HarnessAdapter` says how to detect the harness from a process's environment, where its hook settings
live and what to write there, which keys its hook payloads carry, what its hooks must print, how to
resume a session headless, and which live channel (if any) can wake an idle session. Stdlib only.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple, Protocol, runtime_checkable

__all__ = [
    "arg_safe",
    "HarnessAdapter",
    "HookPlan",
    "PORTABLE",
    "command_entry",
    "hook_argv",
    "hook_command",
    "is_ours",
    "portable",
    "render_common",
]

PORTABLE = "portable"
"""`exe` for project installs: the command finds `frontdesk` on PATH and is a silent no-op without it."""


class HookPlan(NamedTuple):
    """Timeouts (seconds) of the installed hooks (a NamedTuple: the hook path skips importing dataclasses)."""

    stop_timeout: int = 900
    rewake_timeout: int = 86400
    quick_timeout: int = 30
    guard: bool = True
    """Also install the guard as the hook before each shell command (where the harness's shape allows)."""


@runtime_checkable
class HarnessAdapter(Protocol):
    """One agent harness (Claude Code, Codex, Gemini CLI...)."""

    name: str
    """The CLI name: `frontdesk hooks install NAME`."""
    harness: str
    """The session's harness value (agents.model.Harness)."""
    binary: str
    live_channel: str | None
    """The delivery channel that wakes an idle session of this harness by itself, if any."""

    def detect(self, env: Mapping[str, str]) -> str | None:
        """This process's session id when it runs under the harness ("" when under it, id unknown)."""
        ...

    def settings_paths(self, scope: str, project: Path, home: Path) -> dict[str, Path]:
        """The files an install touches: {"hooks": path, ...}."""
        ...

    def entries(self, plan: HookPlan, exe: str | None) -> dict[str, list[dict[str, Any]]]:
        """Our matcher groups per harness event, for the hooks settings file."""
        ...

    def session_id(self, payload: Mapping[str, Any]) -> str | None:
        """The session id in a hook's input."""
        ...

    def render(self, event: str, got: Mapping[str, Any]) -> tuple[str, str, int]:
        """(stdout, stderr, exit code) of one of our hooks, from the gateway's answer."""
        ...

    def resume_argv(self, session_id: str, text: str, binary: str | None = None) -> list[str] | None:
        """The command that resumes an ended session headless with `text` as its prompt (None: cannot)."""
        ...


def arg_safe(value: str) -> bool:
    """Whether an id may go on a harness's command line as a value: not empty, no leading '-' (it would be read
    as an option), no control character."""
    return bool(value) and not value.startswith("-") and not any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in value)


_OURS = re.compile(
    r"(?:^|[/\s'\"])frontdesk(?:\.exe)?['\"]?\s+(?:guard\s+)?hook\b|frontdesk\.agents\.hooks\s"
    r"|frontdesk\.cli\.guard\s+hook\b"
    r"|(?:^|[/\s'\"])frontdesk(?:\.exe)?['\"]?\s+fs\s+hint\b|frontdesk\.storage\.hint\b"  # the fs note (issue 17)
)


def is_ours(hook: Any) -> bool:
    """Whether a hook entry is one frontdesk installed."""
    cmd = hook.get("command") if isinstance(hook, dict) else None
    return isinstance(cmd, str) and bool(_OURS.search(cmd))


def hook_argv(event: str, harness: str, budget: float | None = None, exe: str | None = None) -> list[str]:
    """The argv of one of our hooks: the handler module run by frontdesk's own interpreter."""
    argv = [exe or sys.executable, "-m", "frontdesk.agents.hooks", event, "--harness", harness]
    return argv + (["--budget", str(int(budget))] if budget is not None else [])


def portable(words: list[str]) -> str:
    """A hook command that resolves on any machine: `frontdesk ...` from PATH, nothing when absent.

    Project settings are committed and run on colleagues' machines, where the installer's virtualenv
    does not exist (issue 19, defect 3). `exec` keeps the hook's exit code (the rewake hook's 2).
    """
    return "command -v frontdesk >/dev/null 2>&1 || exit 0; exec " + shlex.join(["frontdesk", *words])


def hook_command(event: str, harness: str, budget: float | None = None, exe: str | None = None) -> str:
    """The shell command a harness runs for one of our hooks (`exe=PORTABLE`: found on PATH)."""
    if exe == PORTABLE:
        return portable(["hook", *hook_argv(event, harness, budget, "python")[3:]])
    return shlex.join(hook_argv(event, harness, budget, exe))


def command_entry(
    event: str, harness: str, timeout: int, exe: str | None, budget: bool = False, **extra: Any
) -> dict[str, Any]:
    """One hook configuration: our command, its timeout (seconds), the harness's extra keys."""
    entry: dict[str, Any] = {
        "type": "command",
        "command": hook_command(event, harness, timeout - 20 if budget else None, exe),
        "timeout": timeout,
    }
    entry.update(extra)
    return entry


def render_common(event: str, got: Mapping[str, Any], context_event: str | None = None) -> tuple[str, str, int]:
    """The shapes Claude Code, Codex and Gemini CLI share.

    Stop (Gemini: AfterAgent): `{"decision": "block", "reason": <report>}`; rewake: the report on stderr,
    exit 2; SessionStart / UserPromptSubmit (Gemini: BeforeAgent): `hookSpecificOutput.additionalContext`.
    """
    text = str(got.get("text") or "")
    if event in ("Stop", "SubagentStop"):
        if got.get("delivery") and text:
            return json.dumps({"decision": "block", "reason": text}), "", 0
        return "", "", 0
    if event == "rewake":
        return ("", text + "\n", 2) if got.get("delivery") and text else ("", "", 0)
    if event in ("SessionStart", "UserPromptSubmit"):
        from frontdesk.agents.framing import queue_line

        unread = int(got.get("unread") or 0) if not got.get("delivery") else 0
        parts = [p for p in (text, queue_line(got.get("active_jobs") or [], unread)) if p]
        if not parts:
            return "", "", 0
        name = context_event or event
        out = {"hookSpecificOutput": {"hookEventName": name, "additionalContext": "\n\n".join(parts)}}
        return json.dumps(out), "", 0
    return "", "", 0
