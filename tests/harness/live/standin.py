"""A scripted stand-in for the Anthropic Messages API on loopback, for driving the real Claude Code binary.

Claude Code sends `POST /v1/messages?beta=true` with `"stream": true`; the stand-in answers with the
standard server-sent event stream. What it answers is scripted by rules over the text of the request's
last user message (tool results included): the first rule whose `match` occurs there (and that has uses
left) gives the reply, either plain text (`end_turn`) or one `Bash` tool call (`tool_use`). Every request
is recorded, so a test can assert what reached the model and when. Stdlib only; one thread per request.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Rule", "Seen", "StandIn"]


@dataclass
class Rule:
    """When the last user message contains `match`, answer with `text` or a Bash call of `bash`."""

    match: str
    text: str | None = None
    bash: str | None = None
    uses: int = 1
    delay_s: float = 0.0
    """Seconds to hold the reply before streaming it (a model that thinks: the turn stays in progress)."""


@dataclass
class Seen:
    """One request the stand-in received."""

    at: float
    body: dict[str, Any]
    last_user_text: str
    main_loop: bool
    """Whether it carries tools (the agent loop), as opposed to side calls (titles, summaries)."""


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
    """The text of the last user-role message (tool results included)."""
    for msg in reversed(body.get("messages") or []):
        if msg.get("role") == "user":
            return _text_of(msg.get("content"))
    return ""


def all_user_text(body: dict[str, Any]) -> str:
    """Every user-role message's text, joined (to count how often something reached the model)."""
    msgs = body.get("messages") or []
    return "\n".join(_text_of(m.get("content")) for m in msgs if m.get("role") == "user")


@dataclass
class StandIn:
    """The server; `start()` binds 127.0.0.1 on a free port; `url` is the ANTHROPIC_BASE_URL."""

    rules: list[Rule] = field(default_factory=list)
    default_text: str = "Done."
    seen: list[Seen] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _ids: Any = field(default_factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _changed: threading.Condition = field(init=False)

    def __post_init__(self) -> None:
        self._changed = threading.Condition(self._lock)

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> StandIn:
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._json(200, {"data": [], "has_more": False})

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                if "count_tokens" in self.path:
                    self._json(200, {"input_tokens": 10})
                    return
                if not self.path.startswith("/v1/messages"):
                    err = {"type": "not_found_error", "message": self.path}
                    self._json(404, {"type": "error", "error": err})
                    return
                rule = standin._record(body)
                if rule is not None and rule.delay_s:
                    time.sleep(rule.delay_s)
                blocks = standin._blocks(rule, body)
                if body.get("stream"):
                    self._stream(blocks, body)
                else:
                    self._json(200, standin._message(blocks, body))

            def _json(self, code: int, obj: Any) -> None:
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, blocks: list[dict[str, Any]], body: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                for event in standin._events(blocks, body):
                    self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
                    self.wfile.flush()
                self.close_connection = True

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    # -- scripting --------------------------------------------------------------------------------
    def _record(self, body: dict[str, Any]) -> Rule | None:
        text = last_user_text(body)
        main = bool(body.get("tools"))
        with self._changed:
            self.seen.append(Seen(time.time(), body, text, main))
            self._changed.notify_all()
            if not main:
                return None
            for rule in self.rules:
                if rule.uses > 0 and rule.match in text:
                    rule.uses -= 1
                    return rule
        return None

    def _blocks(self, rule: Rule | None, body: dict[str, Any]) -> list[dict[str, Any]]:
        if rule is not None and rule.bash is not None:
            return [
                {
                    "type": "tool_use",
                    "id": f"toolu_{next(self._ids):06d}",
                    "name": "Bash",
                    "input": {"command": rule.bash, "description": "run a command"},
                }
            ]
        text = rule.text if rule is not None and rule.text is not None else self.default_text
        if not body.get("tools"):
            text = "Session"  # titles and other side calls
        return [{"type": "text", "text": text}]

    def _message(self, blocks: list[dict[str, Any]], body: dict[str, Any]) -> dict[str, Any]:
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        return {
            "id": f"msg_{next(self._ids):06d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "claude-standin"),
            "content": blocks,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }

    def _events(self, blocks: list[dict[str, Any]], body: dict[str, Any]) -> list[dict[str, Any]]:
        msg = self._message([], body)
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        events: list[dict[str, Any]] = [{"type": "message_start", "message": msg}]
        for i, block in enumerate(blocks):
            if block["type"] == "text":
                empty = {"type": "text", "text": ""}
                events += [
                    {"type": "content_block_start", "index": i, "content_block": empty},
                    {"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": block["text"]}},
                ]
            else:
                start = {**block, "input": {}}
                events += [
                    {"type": "content_block_start", "index": i, "content_block": start},
                    {
                        "type": "content_block_delta",
                        "index": i,
                        "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])},
                    },
                ]
            events.append({"type": "content_block_stop", "index": i})
        events += [
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
            {"type": "message_stop"},
        ]
        return events

    # -- assertions -------------------------------------------------------------------------------
    def main_requests(self) -> list[Seen]:
        """The agent-loop requests so far."""
        with self._lock:
            return [s for s in self.seen if s.main_loop]

    def wait_for(self, pred: Callable[[Seen], bool], timeout: float, after: int = 0) -> Seen:
        """The first main-loop request after the first `after` matching `pred`; AssertionError on timeout."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                main = [s for s in self.seen if s.main_loop]
                for s in main[after:]:
                    if pred(s):
                        return s
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"no matching request within {timeout}s; last user texts: "
                        + repr([s.last_user_text[-200:] for s in main[-3:]])
                    )
                self._changed.wait(left)
