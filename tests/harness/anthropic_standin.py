"""A loopback stand-in for the Anthropic Messages API, enough for the real `claude` binary to run a turn.

It serves `POST /v1/messages` (streamed as server-sent events, or plain JSON), records every request body,
and answers the agent-loop requests (those that carry `tools`) from a script: a list of replies, each
either `("text", "...")`, `("bash", "<command>")` (a `tool_use` of the Bash tool) or `("tool", JSON)` with
`{"name": ..., "input": ...}` (a `tool_use` of any tool, e.g. an MCP tool `mcp__frontdesk__report`). Requests without
tools (titles, summaries) get a short text. Stdlib only; run in a thread by the tests.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["MessagesStandIn"]


def _events(reply: tuple[str, str], n: int) -> list[tuple[str, dict[str, Any]]]:
    kind, value = reply
    msg = {
        "id": f"msg_{n}",
        "type": "message",
        "role": "assistant",
        "model": "claude-standin",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    out: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": msg})]
    if kind == "bash":
        block = {"type": "tool_use", "id": f"toolu_{n}", "name": "Bash", "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps({"command": value, "description": "run it"})}
        stop = "tool_use"
    elif kind == "tool":  # value: {"name": TOOL, "input": {...}} as JSON (an MCP tool, mcp__server__tool)
        call = json.loads(value)
        block = {"type": "tool_use", "id": f"toolu_{n}", "name": call["name"], "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(call["input"])}
        stop = "tool_use"
    else:
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": value}
        stop = "end_turn"
    out += [
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return out


def _message(reply: tuple[str, str], n: int) -> dict[str, Any]:
    kind, value = reply
    if kind == "bash":
        content = [{"type": "tool_use", "id": f"toolu_{n}", "name": "Bash", "input": {"command": value}}]
        stop = "tool_use"
    else:
        content, stop = [{"type": "text", "text": value}], "end_turn"
    return {
        "id": f"msg_{n}",
        "type": "message",
        "role": "assistant",
        "model": "claude-standin",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


class MessagesStandIn:
    """`with MessagesStandIn(script) as api:` → `api.url`, `api.requests`, `api.loop_requests`."""

    def __init__(self, script: list[tuple[str, str]], first_id: int = 1) -> None:
        """`first_id`: the number of the first message / tool_use id (a resumed session already holds lower ones)."""
        self.script = list(script)
        self.first_id = first_id
        self.requests: list[dict[str, Any]] = []
        self.loop_requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {}
                if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
                    self._json({"input_tokens": 10})
                    return
                with standin.lock:
                    standin.requests.append(body)
                    if body.get("tools"):
                        standin.loop_requests.append(body)
                        n = len(standin.loop_requests)
                        reply = standin.script[n - 1] if n <= len(standin.script) else ("text", "done")
                        n += standin.first_id - 1
                    else:
                        n, reply = 1000 + len(standin.requests), ("text", "ok")
                if body.get("stream"):
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                    self.send_header("cache-control", "no-cache")
                    self.end_headers()
                    for name, data in _events(reply, n):
                        self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                    self.wfile.flush()
                    self.close_connection = True
                else:
                    self._json(_message(reply, n))

            def do_GET(self) -> None:
                self._json({"data": [], "has_more": False})

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.end_headers()

            def _json(self, data: Any) -> None:
                payload = json.dumps(data).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> MessagesStandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

    @staticmethod
    def last_user_text(body: dict[str, Any]) -> str:
        """All text of the last user message (strings, text blocks, tool results)."""
        msgs = [m for m in body.get("messages", []) if m.get("role") == "user"]
        if not msgs:
            return ""
        content = msgs[-1].get("content")
        if isinstance(content, str):
            return content
        parts: list[str] = []
        for block in content or []:
            if block.get("type") == "text":
                parts.append(block.get("text", ""))
            elif block.get("type") == "tool_result":
                inner = block.get("content")
                parts.append(
                    inner
                    if isinstance(inner, str)
                    else " ".join(b.get("text", "") for b in inner or [] if isinstance(b, dict))
                )
        return "\n".join(parts)
