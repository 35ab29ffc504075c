"""One adapter per agent harness (issue 11): adding a harness is one module here plus its tests.

`ADAPTERS` names the built-in ones; a site package adds its own under the entry-point group
`frontdesk.harnesses` (name = "module:Class"). Modules are imported only when asked for: the hook
handlers run on every turn and load just their own harness.
"""

from __future__ import annotations

import importlib

from frontdesk.agents.harnesses.base import HarnessAdapter

__all__ = ["ADAPTERS", "HarnessAdapter", "adapter", "names", "for_harness"]

ADAPTERS: dict[str, str] = {
    "claude": "frontdesk.agents.harnesses.claude:ClaudeAdapter",
    "codex": "frontdesk.agents.harnesses.codex:CodexAdapter",
    "gemini": "frontdesk.agents.harnesses.gemini:GeminiAdapter",
}
_ALIASES = {"claude-code": "claude", "claude_code": "claude", "gemini-cli": "gemini"}


def _registered() -> dict[str, str]:
    from importlib.metadata import entry_points

    out = dict(ADAPTERS)
    for ep in entry_points(group="frontdesk.harnesses"):
        out.setdefault(ep.name, ep.value)
    return out


def names() -> list[str]:
    """Every harness frontdesk can install hooks for (built in and registered)."""
    return sorted(_registered())


def adapter(name: str) -> HarnessAdapter:
    """The adapter for a harness name (`claude`, `claude-code`, `codex`, `gemini`...); UserError if unknown."""
    from frontdesk.errors import UserError

    key = _ALIASES.get(name, name)
    path = ADAPTERS.get(key) or _registered().get(key)
    if path is None:
        raise UserError(f"unknown harness {name!r} (one of {', '.join(names())})")
    module, _, cls = path.partition(":")
    made: HarnessAdapter = getattr(importlib.import_module(module), cls)()
    return made


def for_harness(harness: str) -> HarnessAdapter | None:
    """The adapter for a session's harness value (Harness enum string), or None for `other`."""
    try:
        return adapter(harness)
    except Exception:
        return None
