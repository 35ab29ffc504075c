"""A loopback stand-in for the Anthropic Messages API, enough for the real `claude` binary to run a turn.

It serves `POST /v1/messages` (streamed as server-sent events, or plain JSON), records every request body,
and answers the agent-loop requests (those that carry `tools`) from a script: a list of replies, each
either `("text", "...")`, `("bash", "<command>")` (a `tool_use` of the Bash tool) or `("tool", JSON)` with
`{"name": ..., "input": ...}` (a `tool_use` of any tool, e.g. an MCP tool `mcp__frontdesk__report`). Requests without
tools (titles, summaries) get a short text. The answers' shapes (`message`, `message_events`) and the reading of
a request (`last_user_text`, `all_user_text`) serve live/standin.py's rule-driven stand-in too. Stdlib only.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from loopback import Exchange, Loopback

__all__ = ["MessagesStandIn", "all_user_text", "last_user_text", "message", "message_events"]


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    out: list[str] = []
    for block in content or []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            out.append(str(block.get("text", "")))
        elif block.get("type") == "tool_result":
            out.append(_text_of(block.get("content")))
    return "\n".join(out)


def last_user_text(body: dict[str, Any]) -> str:
    """The text of the last user-role message (strings, text blocks, tool results)."""
    for msg in reversed(body.get("messages") or []):
        if msg.get("role") == "user":
            return _text_of(msg.get("content"))
    return ""


def all_user_text(body: dict[str, Any]) -> str:
    """Every user-role message's text, joined (to count how often something reached the model)."""
    msgs = body.get("messages") or []
    return "\n".join(_text_of(m.get("content")) for m in msgs if m.get("role") == "user")


def message(blocks: list[dict[str, Any]], msg_id: str, model: str) -> dict[str, Any]:
    """The whole assistant message holding `blocks` (text or tool_use), as a non-streamed answer gives it."""
    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    return {"id": msg_id, "type": "message", "role": "assistant", "model": model, "content": blocks,
            "stop_reason": stop, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 5}}  # fmt: skip


def message_events(blocks: list[dict[str, Any]], msg_id: str, model: str) -> list[dict[str, Any]]:
    """The same message as the standard event stream (`message_start` … `message_stop`)."""
    stop = message(blocks, msg_id, model)["stop_reason"]
    events: list[dict[str, Any]] = [{"type": "message_start", "message": message([], msg_id, model)}]
    for i, block in enumerate(blocks):
        if block["type"] == "text":
            start, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
        else:
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            {"type": "content_block_start", "index": i, "content_block": start},
            {"type": "content_block_delta", "index": i, "delta": delta},
            {"type": "content_block_stop", "index": i},
        ]
    end = {"stop_reason": stop, "stop_sequence": None}
    return [*events, {"type": "message_delta", "delta": end, "usage": {"output_tokens": 5}}, {"type": "message_stop"}]


def _blocks(reply: tuple[str, str], n: int) -> list[dict[str, Any]]:
    kind, value = reply
    if kind == "bash":
        return [{"type": "tool_use", "id": f"toolu_{n}", "name": "Bash",
                 "input": {"command": value, "description": "run it"}}]  # fmt: skip
    if kind == "tool":  # value: {"name": TOOL, "input": {...}} as JSON (an MCP tool, mcp__server__tool)
        call = json.loads(value)
        return [{"type": "tool_use", "id": f"toolu_{n}", "name": call["name"], "input": call["input"]}]
    return [{"type": "text", "text": value}]


class MessagesStandIn(Loopback):
    """`with MessagesStandIn(script) as api:` → `api.url`, `api.requests`, `api.loop_requests`."""

    http_version = "HTTP/1.0"
    last_user_text = staticmethod(last_user_text)

    def __init__(self, script: list[tuple[str, str]], first_id: int = 1) -> None:
        """`first_id`: the number of the first message / tool_use id (a resumed session already holds lower ones)."""
        self.script = list(script)
        self.first_id = first_id
        self.requests: list[dict[str, Any]] = []
        self.loop_requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def post(self, exchange: Exchange, body: dict[str, Any]) -> None:
        if not exchange.path.startswith("/v1/messages") or "count_tokens" in exchange.path:
            exchange.send_json({"input_tokens": 10})
            return
        with self.lock:
            self.requests.append(body)
            if body.get("tools"):
                self.loop_requests.append(body)
                n = len(self.loop_requests)
                reply = self.script[n - 1] if n <= len(self.script) else ("text", "done")
                n += self.first_id - 1
            else:
                n, reply = 1000 + len(self.requests), ("text", "ok")
        blocks, msg_id = _blocks(reply, n), f"msg_{n}"
        if body.get("stream"):
            exchange.send_events((e["type"], e) for e in message_events(blocks, msg_id, "claude-standin"))
        else:
            exchange.send_json(message(blocks, msg_id, "claude-standin"))
