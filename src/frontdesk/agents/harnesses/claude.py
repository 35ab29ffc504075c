"""Claude Code: `.claude/settings.json` hooks, `CLAUDE_CODE_SESSION_ID` in its Bash tool, the live inbox."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from frontdesk.agents.harnesses.base import PORTABLE, HookPlan, command_entry, portable, render_common

__all__ = ["ClaudeAdapter", "fs_hint_entry", "guard_entry"]


def guard_entry(timeout: int, exe: str | None = None) -> dict[str, Any]:
    """The guard as a PreToolUse hook: checks each Bash command before it runs (allow/ask/deny)."""
    argv = [exe or sys.executable, "-m", "frontdesk.cli.guard", "hook"]
    cmd = portable(["guard", "hook"]) if exe == PORTABLE else shlex.join(argv)
    return {"type": "command", "command": cmd, "timeout": timeout}


def fs_hint_entry(timeout: int, exe: str | None = None) -> dict[str, Any]:
    """With the guard, after each Bash command: a one-line note suggesting `frontdesk fs` when the command
    walked a shared filesystem (storage/hint.py; once per session and command kind)."""
    argv = [exe or sys.executable, "-m", "frontdesk.storage.hint"]
    cmd = portable(["fs", "hint"]) if exe == PORTABLE else shlex.join(argv)
    return {"type": "command", "command": cmd, "timeout": timeout}


class ClaudeAdapter:
    """Claude Code (checked with 2.1.332)."""

    name = "claude"
    harness = "claude-code"
    binary = "claude"
    live_channel: str | None = "inbox"

    def detect(self, env: Mapping[str, str]) -> str | None:
        """Its Bash tool exports CLAUDE_CODE_SESSION_ID (and CLAUDECODE=1)."""
        if env.get("CLAUDE_CODE_SESSION_ID") or env.get("CLAUDECODE") == "1":
            return env.get("CLAUDE_CODE_SESSION_ID") or ""
        return None

    def settings_paths(self, scope: str, project: Path, home: Path) -> dict[str, Path]:
        """`.claude/settings.json` in the project, or the user's."""
        base = project / ".claude" if scope == "project" else home / ".claude"
        return {"hooks": base / "settings.json"}

    def entries(self, plan: HookPlan, exe: str | None) -> dict[str, list[dict[str, Any]]]:
        """SessionStart, UserPromptSubmit, Stop (+ the asyncRewake background hook), SessionEnd, the guard."""
        h, q = self.harness, plan.quick_timeout
        out: dict[str, list[dict[str, Any]]] = {
            "SessionStart": [{"hooks": [command_entry("session-start", h, q, exe)]}],
            "UserPromptSubmit": [{"hooks": [command_entry("prompt", h, q, exe)]}],
            "Stop": [
                {
                    "hooks": [
                        command_entry("stop", h, plan.stop_timeout, exe, budget=True),
                        command_entry(
                            "rewake", h, plan.rewake_timeout, exe, budget=True, **{"async": True, "asyncRewake": True}
                        ),
                    ]
                }
            ],
            "SessionEnd": [{"hooks": [command_entry("session-end", h, q, exe)]}],
        }
        out["PostToolUse"] = [{"matcher": "TodoWrite", "hooks": [command_entry("plan", h, q, exe)]}]  # issue 18
        if plan.guard:
            out["PreToolUse"] = [{"matcher": "Bash", "hooks": [guard_entry(q, exe)]}]
            out["PostToolUse"].append({"matcher": "Bash", "hooks": [fs_hint_entry(q, exe)]})  # issue 17
        return out

    def session_id(self, payload: Mapping[str, Any]) -> str | None:
        """`session_id` in every hook input."""
        sid = payload.get("session_id")
        return str(sid) if sid else None

    def render(self, event: str, got: Mapping[str, Any]) -> tuple[str, str, int]:
        """The shapes of the Claude Code hooks reference."""
        return render_common(event, got)

    def resume_argv(self, session_id: str, text: str, binary: str | None = None) -> list[str] | None:
        """`claude -p TEXT --resume ID --output-format json`."""
        return [binary or self.binary, "-p", text, "--resume", session_id, "--output-format", "json"]
