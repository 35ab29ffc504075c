"""Attribution of a process to an agent harness, a person, or neither (pure: no /proc here).

The rule (the paper's): a process whose executable is an agent harness, whose environment carries a harness
marker (`CLAUDECODE`, `CODEX_*`, `AI_AGENT`), or that descends from such a process belongs to that agent.
Otherwise a process that is an interactive shell on a terminal, or descends from one, belongs to a person.
Everything else (daemons, cron, services) is excluded. An agent ancestor wins over a person's shell.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "Actor",
    "Attribution",
    "EXCLUDED",
    "Harness",
    "PERSON",
    "SHELLS",
    "attribute",
    "harness_of_env",
    "harness_of_exe",
]


class Harness(enum.StrEnum):
    """The agent harnesses recognised (names as stored)."""

    CLAUDE_CODE = "claude-code"
    CODEX = "codex"
    CURSOR = "cursor"
    COPILOT = "copilot"
    GEMINI = "gemini-cli"
    OPENCODE = "opencode"
    OTHER = "other-agent"
    """An `AI_AGENT` marker naming a harness not listed here."""


class Actor(enum.StrEnum):
    """Whom a process is attributed to."""

    AGENT = "agent"
    PERSON = "person"
    EXCLUDED = "excluded"


@dataclass(frozen=True)
class Attribution:
    """An actor and, for an agent, its harness."""

    actor: Actor
    harness: Harness | None = None


EXCLUDED = Attribution(Actor.EXCLUDED)
PERSON = Attribution(Actor.PERSON)

SHELLS = frozenset({"sh", "bash", "zsh", "fish", "dash", "ksh", "tcsh", "csh", "mksh", "xonsh", "nu"})
"""Executable names of interactive shells (a login shell's `-bash` is matched without its dash)."""

# executable basename -> harness (comm is cut at 15 characters by the kernel; the names below are shorter)
_EXES: dict[str, Harness] = {
    "claude": Harness.CLAUDE_CODE,
    "claude-code": Harness.CLAUDE_CODE,
    "codex": Harness.CODEX,
    "codex-exec": Harness.CODEX,
    "cursor-agent": Harness.CURSOR,
    "cursor": Harness.CURSOR,
    "copilot": Harness.COPILOT,
    "gemini": Harness.GEMINI,
    "opencode": Harness.OPENCODE,
}
# a script an interpreter (node, bun, deno) runs: package path fragments -> harness
_PACKAGES: tuple[tuple[str, Harness], ...] = (
    ("@anthropic-ai/claude-code", Harness.CLAUDE_CODE),
    ("@openai/codex", Harness.CODEX),
    ("@google/gemini-cli", Harness.GEMINI),
    ("@github/copilot", Harness.COPILOT),
    ("opencode-ai", Harness.OPENCODE),
    ("cursor-agent", Harness.CURSOR),
)
_INTERPRETERS = frozenset({"node", "nodejs", "bun", "deno", "env"})
_AI_AGENT_PREFIXES: tuple[tuple[str, Harness], ...] = (
    ("claude", Harness.CLAUDE_CODE),
    ("codex", Harness.CODEX),
    ("cursor", Harness.CURSOR),
    ("copilot", Harness.COPILOT),
    ("gemini", Harness.GEMINI),
    ("opencode", Harness.OPENCODE),
)
ENV_MARKERS = ("CLAUDECODE", "AI_AGENT", "CODEX_")
"""Environment names (or prefixes ending in `_`) read from /proc/PID/environ."""


def _base(path: str) -> str:
    return os.path.basename(path).lstrip("-")


def harness_of_exe(comm: str, argv: Sequence[str]) -> Harness | None:
    """The harness a process is by its executable name, or the script its interpreter runs."""
    names = [_base(comm)] + ([_base(argv[0])] if argv else [])
    for name in names:
        if name in _EXES:
            return _EXES[name]
    if argv and _base(argv[0]) in _INTERPRETERS:
        for arg in argv[1:3]:
            if _base(arg) in _EXES:
                return _EXES[_base(arg)]
            for fragment, harness in _PACKAGES:
                if fragment in arg:
                    return harness
    return None


def harness_of_env(env: Mapping[str, str]) -> Harness | None:
    """The harness named by a process's environment markers, if any."""
    if env.get("CLAUDECODE"):
        return Harness.CLAUDE_CODE
    if any(k.startswith("CODEX_") and k != "CODEX_HOME" for k in env):
        return Harness.CODEX
    marker = env.get("AI_AGENT", "").strip().lower()
    if marker:
        for prefix, harness in _AI_AGENT_PREFIXES:
            if marker.startswith(prefix):
                return harness
        return Harness.OTHER
    return None


def attribute(
    comm: str,
    argv: Sequence[str],
    env: Mapping[str, str],
    tty: int,
    parent: Attribution | None,
) -> Attribution:
    """This process's attribution, given its parent's (None when the parent is unknown or pid 1)."""
    if parent is not None and parent.actor is Actor.AGENT:
        return parent
    harness = harness_of_exe(comm, argv) or harness_of_env(env)
    if harness is not None:
        return Attribution(Actor.AGENT, harness)
    if parent is not None and parent.actor is Actor.PERSON:
        return PERSON
    if tty and _base(comm) in SHELLS:
        return PERSON
    return EXCLUDED
