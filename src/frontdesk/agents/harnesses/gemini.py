"""Gemini CLI: `.gemini/settings.json` hooks (checked with 0.61.0 and geminicli.com/docs/hooks/reference).

Events map onto frontdesk's: SessionStart, BeforeAgent (a prompt was submitted), AfterAgent (the turn
ends: `{"decision": "block", "reason": ...}` sends the report to the agent as a new prompt; its input
carries `stop_hook_active`), SessionEnd. Hook timeouts are in milliseconds and each hook has a `name`
(Gemini fingerprints project hooks by name and command and asks before running new ones). Commands its
shell tool runs get `GEMINI_CLI=1` but not the session id, so `frontdesk run` there needs
`FRONTDESK_SESSION` (start Gemini with `--session-id $FRONTDESK_SESSION`); hooks get `GEMINI_SESSION_ID`.
No guard hook: Gemini's BeforeTool expects `decision: deny`, not Claude's permission shape. No headless
resume by id (`--resume` takes "latest" or an index) and no live channel.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from frontdesk.agents.harnesses.base import HookPlan, command_entry, render_common

__all__ = ["GeminiAdapter"]

_EVENTS = {"UserPromptSubmit": "BeforeAgent", "Stop": "AfterAgent"}


def _entry(event: str, timeout: int, exe: str | None, budget: bool = False) -> dict[str, Any]:
    entry = command_entry(event, "gemini", timeout, exe, budget=budget)
    return {**entry, "name": f"frontdesk-{event}", "timeout": timeout * 1000}


class GeminiAdapter:
    """Gemini CLI."""

    name = "gemini"
    harness = "gemini"
    binary = "gemini"
    live_channel: str | None = None

    def detect(self, env: Mapping[str, str]) -> str | None:
        """Its shell tool sets GEMINI_CLI=1; the session id only reaches hooks (GEMINI_SESSION_ID)."""
        if env.get("GEMINI_CLI") == "1" or env.get("GEMINI_SESSION_ID"):
            return env.get("GEMINI_SESSION_ID") or ""
        return None

    def settings_paths(self, scope: str, project: Path, home: Path) -> dict[str, Path]:
        """`.gemini/settings.json` in the project, or the user's."""
        base = project / ".gemini" if scope == "project" else home / ".gemini"
        return {"hooks": base / "settings.json"}

    def entries(self, plan: HookPlan, exe: str | None) -> dict[str, list[dict[str, Any]]]:
        """SessionStart, BeforeAgent, AfterAgent, SessionEnd."""
        q = plan.quick_timeout
        return {
            "SessionStart": [{"hooks": [_entry("session-start", q, exe)]}],
            "BeforeAgent": [{"hooks": [_entry("prompt", q, exe)]}],
            "AfterAgent": [{"hooks": [_entry("stop", plan.stop_timeout, exe, budget=True)]}],
            "SessionEnd": [{"hooks": [_entry("session-end", q, exe)]}],
        }

    def session_id(self, payload: Mapping[str, Any]) -> str | None:
        """`session_id` in every hook input."""
        sid = payload.get("session_id")
        return str(sid) if sid else None

    def render(self, event: str, got: Mapping[str, Any]) -> tuple[str, str, int]:
        """AfterAgent blocks like Stop; BeforeAgent's context names Gemini's own event."""
        return render_common(event, got, _EVENTS.get(event))

    def resume_argv(self, session_id: str, text: str, binary: str | None = None) -> list[str] | None:
        """None: `gemini --resume` takes "latest" or an index, not a session id."""
        return None
