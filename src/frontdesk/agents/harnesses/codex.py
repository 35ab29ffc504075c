"""Codex: `.codex/hooks.json`, `CODEX_THREAD_ID` in its shell, `notify` for idle turns, the queue channel."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from frontdesk.agents.harnesses.base import HookPlan, command_entry, render_common

__all__ = ["CodexAdapter"]


class CodexAdapter:
    """Codex (checked with 0.171.0). It has no async rewake: `notify`, the daemon and resume cover idle."""

    name = "codex"
    harness = "codex"
    binary = "codex"
    live_channel: str | None = "codex_live"

    def detect(self, env: Mapping[str, str]) -> str | None:
        """Commands it runs inherit CODEX_THREAD_ID (= CODEX_SESSION_ID)."""
        sid = env.get("CODEX_THREAD_ID") or env.get("CODEX_SESSION_ID")
        return sid or None

    def settings_paths(self, scope: str, project: Path, home: Path) -> dict[str, Path]:
        """`.codex/hooks.json` in the project or `$CODEX_HOME`; `config.toml` beside it (notify)."""
        import os

        base = project / ".codex" if scope == "project" else Path(os.environ.get("CODEX_HOME") or home / ".codex")
        return {"hooks": base / "hooks.json", "config": base / "config.toml"}

    def entries(self, plan: HookPlan, exe: str | None) -> dict[str, list[dict[str, Any]]]:
        """SessionStart, UserPromptSubmit, Stop."""
        h, q = self.harness, plan.quick_timeout
        return {
            "SessionStart": [{"hooks": [command_entry("session-start", h, q, exe)]}],
            "UserPromptSubmit": [{"hooks": [command_entry("prompt", h, q, exe)]}],
            "Stop": [{"hooks": [command_entry("stop", h, plan.stop_timeout, exe, budget=True)]}],
        }

    def session_id(self, payload: Mapping[str, Any]) -> str | None:
        """`session_id` in hook input; `thread-id` in the `notify` program's argument."""
        sid = payload.get("session_id") or payload.get("thread-id") or payload.get("thread_id")
        return str(sid) if sid else None

    def render(self, event: str, got: Mapping[str, Any]) -> tuple[str, str, int]:
        """Codex's hooks.json shapes are Claude Code's."""
        return render_common(event, got)

    def resume_argv(self, session_id: str, text: str, binary: str | None = None) -> list[str] | None:
        """`codex exec --skip-git-repo-check resume ID TEXT`."""
        return [binary or self.binary, "exec", "--skip-git-repo-check", "resume", session_id, text]
