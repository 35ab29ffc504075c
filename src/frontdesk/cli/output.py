"""The one place the CLI writes results: JSON for agents (`--json`), short text for people.

stdout carries results only; logs and errors go to stderr.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable

TYPE_CHECKING = False  # typing costs a fresh process ~1.5 ms: annotations only (the CLI's hot path)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["emit", "emit_error", "dumps"]


def dumps(data: Any) -> str:
    """Stable JSON: sorted keys, no NaN surprises."""
    return json.dumps(data, sort_keys=True, default=str)


def emit(as_json: bool, data: Any, text: str | Callable[[], str] | None = None) -> None:
    """Print `data` as JSON when `as_json`, else `text` (or a plain rendering of data)."""
    if as_json:
        sys.stdout.write(dumps(data) + "\n")
    else:
        out = text() if callable(text) else text
        if out is None:
            out = data if isinstance(data, str) else dumps(data)
        if out:
            from frontdesk.cli.termtext import for_terminal

            sys.stdout.write(for_terminal(out if out.endswith("\n") else out + "\n", sys.stdout))
    sys.stdout.flush()


def emit_error(as_json: bool, payload: dict[str, Any]) -> None:
    """One line on stderr (and the JSON error object on stdout with --json)."""
    if as_json:
        sys.stdout.write(dumps(payload) + "\n")
    from frontdesk.cli.termtext import for_terminal

    sys.stderr.write(for_terminal(f"frontdesk: {payload.get('message', 'error')}\n", sys.stderr))
