"""Which agent harness (and session) a process runs under, from its environment. Stdlib only: hot path."""

from __future__ import annotations

import os
from collections.abc import Mapping

TYPE_CHECKING = False  # typing costs a fresh process ~1.5 ms: annotations only (the CLI's hot path)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["detect_context"]


def detect_context(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The submit context: harness, session id, cwd, how to reach it (inbox token: Unix socket only)."""
    env = os.environ if environ is None else environ
    ctx: dict[str, Any] = {"cwd": os.getcwd(), "host": os.uname().nodename}  # host: issue 18 (drain --node)
    if env.get("FRONTDESK_SESSION"):
        ctx["session"] = env["FRONTDESK_SESSION"]
    if env.get("CLAUDE_CODE_SESSION_ID") or env.get("CLAUDECODE") == "1":
        ctx["harness"] = "claude-code"
        ctx.setdefault("session", env.get("CLAUDE_CODE_SESSION_ID"))
    elif env.get("CODEX_THREAD_ID") or env.get("CODEX_SESSION_ID"):
        ctx["harness"] = "codex"
        ctx.setdefault("session", env.get("CODEX_THREAD_ID") or env.get("CODEX_SESSION_ID"))
    elif env.get("GEMINI_CLI") == "1":  # Gemini CLI's shell tool; it does not export the session id
        ctx["harness"] = "gemini"
        ctx.setdefault("session", env.get("GEMINI_SESSION_ID"))
    pid = env.get("CLAUDE_PID") or env.get("FRONTDESK_AGENT_PID") or ""
    if pid.isdigit():  # the agent's own process (FRONTDESK_AGENT_PID for harnesses that do not say)
        ctx["agent_pid"] = int(pid)
    if env.get("TMUX") and env.get("TMUX_PANE"):
        ctx["tmux_socket"] = env["TMUX"].split(",", 1)[0]
        ctx["tmux_pane"] = env["TMUX_PANE"]
    # issue 8 (live inbox): Claude Code's per-session inbox. The token is a secret: sent only over the
    # gateway's Unix socket (same host, peer-credential principal), never to a TCP gateway.
    if (
        env.get("CLAUDE_CODE_MESSAGING_SOCKET")
        and env.get("CLAUDE_CODE_MESSAGING_TOKEN")
        and not env.get("FRONTDESK_URL")
    ):
        ctx["inbox_socket"] = env["CLAUDE_CODE_MESSAGING_SOCKET"]
        ctx["inbox_token"] = env["CLAUDE_CODE_MESSAGING_TOKEN"]
    role = env.get("FRONTDESK_NODE_ROLE")
    if role:
        ctx["node_role"] = role
    if env.get("SLURM_JOB_ID"):
        ctx["in_slurm_job"] = env["SLURM_JOB_ID"]
    return {k: v for k, v in ctx.items() if v}
