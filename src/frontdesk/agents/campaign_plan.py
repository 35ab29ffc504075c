"""The agent's last known plan, read from its transcript by the hook (it runs as the session's user).

Claude Code writes each `TodoWrite` call into its JSONL transcript (`input.todos`: content, status);
Codex writes each `update_plan` function call into its rollout file (`arguments`: JSON with `plan`:
step, status). Only the file's tail is read: the hook runs on every turn. Stdlib only (json's C scanner,
frontdesk.thin): hot path.
"""

from __future__ import annotations

import os
import stat

from frontdesk.thin import parse_json

TYPE_CHECKING = False  # typing costs the hook's fresh process ~1.5 ms: annotations only
if TYPE_CHECKING:
    from typing import Any

__all__ = ["last_plan", "plan_from_lines", "plan_from_tool", "TAIL_BYTES", "MAX_STEPS"]

TAIL_BYTES = 512 * 1024
MAX_STEPS = 50


def _items(raw: Any, text_key: str) -> list[dict[str, str]] | None:
    if not isinstance(raw, list):
        return None
    out = []
    for item in raw[:MAX_STEPS]:
        if isinstance(item, dict) and isinstance(item.get(text_key), str):
            out.append({"text": item[text_key][:300], "status": str(item.get("status") or "pending")[:20]})
    return out


def _field(obj: Any, key: str) -> Any:
    """obj[key] when obj is an object (a transcript or hook input may hold anything), else None."""
    return obj.get(key) if isinstance(obj, dict) else None


def _from_record(rec: Any) -> tuple[list[dict[str, str]], str] | None:
    """A plan from one transcript record, with where it came from; None when the record holds none."""
    if not isinstance(rec, dict):
        return None
    msg = rec.get("message")
    if isinstance(msg, dict) and isinstance(msg.get("content"), list):  # Claude Code
        for block in reversed(msg["content"]):
            if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("name") == "TodoWrite":
                todos = _items(_field(block.get("input"), "todos"), "content")
                if todos is not None:
                    return todos, "TodoWrite"
    payload = rec.get("payload")
    if isinstance(payload, dict) and payload.get("name") == "update_plan":  # Codex
        try:
            args = parse_json(payload.get("arguments") or "{}")
        except ValueError:
            return None
        steps = _items(args.get("plan") if isinstance(args, dict) else None, "step")
        if steps is not None:
            return steps, "update_plan"
    return None


def plan_from_tool(payload: Any) -> tuple[list[dict[str, str]], str] | None:
    """The plan in a PostToolUse hook's input (`tool_name` TodoWrite, `tool_input.todos`)."""
    if not isinstance(payload, dict) or payload.get("tool_name") != "TodoWrite":
        return None
    todos = _items(_field(payload.get("tool_input"), "todos"), "content")
    return (todos, "TodoWrite") if todos is not None else None


def plan_from_lines(lines: list[str]) -> tuple[list[dict[str, str]], str] | None:
    """The last plan in these JSONL lines (a torn first line is skipped)."""
    for line in reversed(lines):
        if "TodoWrite" not in line and "update_plan" not in line:
            continue
        try:
            found = _from_record(parse_json(line))
        except (ValueError, RecursionError):  # a torn or hostile line (the agent writes this file)
            continue
        if found is not None:
            return found
    return None


def last_plan(path: str | None) -> tuple[list[dict[str, str]], str] | None:
    """The last plan in a transcript file, or None (no file, unreadable, no plan in its tail)."""
    if not path:
        return None
    try:  # a regular file only, opened without blocking: a FIFO or a device named here must not hang the hook
        with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC), "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return None
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - TAIL_BYTES))
            data = fh.read(TAIL_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return None
    return plan_from_lines(data.splitlines())
