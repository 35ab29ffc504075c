"""A stand-in for the OpenAI Responses API on loopback, for driving the real Codex binary offline.

Codex sends `POST /v1/responses` with `"stream": true`; every request is recorded and answered with one
assistant message (`Done.`) as the event stream `response.created`, `response.output_item.added`,
`response.output_item.done`, `response.completed`. Stdlib only.
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

__all__ = ["ResponsesStandIn", "input_text"]


def input_text(body: dict[str, Any]) -> str:
    """Every text the request carries in `input` (user messages, instructions aside)."""
    out: list[str] = []
    for item in body.get("input") or []:
        if not isinstance(item, dict):
            continue
        content = item.get("content")
        if isinstance(content, str):
            out.append(content)
        for part in content if isinstance(content, list) else []:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                out.append(part["text"])
    return "\n".join(out)


@dataclass
class ResponsesStandIn:
    """The server; `url` is the provider's base_url (ends in /v1)."""

    reply: str = "Done."
    seen: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _ids: Any = field(default_factory=lambda: itertools.count(1))
    _cond: threading.Condition = field(default_factory=threading.Condition)

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> ResponsesStandIn:
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                data = json.dumps({"object": "list", "data": [], "models": []}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    body = {}
                with standin._cond:
                    standin.seen.append((time.time(), body))
                    standin._cond.notify_all()
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                for event in standin._events():
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

    def _events(self) -> list[dict[str, Any]]:
        n = next(self._ids)
        rid, mid = f"resp_{n}", f"msg_{n}"
        text = {"type": "output_text", "text": self.reply, "annotations": []}
        done = {"type": "message", "id": mid, "role": "assistant", "status": "completed", "content": [text]}
        usage = {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 2,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 12,
        }
        return [
            {
                "type": "response.created",
                "response": {"id": rid, "object": "response", "status": "in_progress", "output": []},
            },
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {**done, "status": "in_progress", "content": []},
            },
            {
                "type": "response.output_text.delta",
                "output_index": 0,
                "item_id": mid,
                "content_index": 0,
                "delta": self.reply,
            },
            {"type": "response.output_item.done", "output_index": 0, "item": done},
            {
                "type": "response.completed",
                "response": {"id": rid, "object": "response", "status": "completed", "output": [done], "usage": usage},
            },
        ]

    def wait_for(self, pred: Callable[[dict[str, Any]], bool], timeout: float, after: int = 0) -> dict[str, Any]:
        """The first request after the first `after` whose body satisfies `pred`."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for _, body in self.seen[after:]:
                    if pred(body):
                        return body
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no matching request in {timeout}s ({len(self.seen)} seen)")
                self._cond.wait(left)
