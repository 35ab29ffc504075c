"""A loopback stand-in for the Gemini API (generativelanguage v1beta), enough for the real `gemini` CLI.

`gemini` (0.61.0) talks to it with GOOGLE_GEMINI_BASE_URL=<url>, GEMINI_API_KEY=<any> and
`security.auth.selectedType = "gemini-api-key"` in its settings. The agent loop streams
`POST /v1beta/models/<model>:streamGenerateContent?alt=sse`; those requests are recorded and answered
from a script of texts; the CLI's utility calls (`:generateContent`: routing, titles) get a short text.
Stdlib only; run in a thread by the tests.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["GeminiStandIn", "request_text"]


def _chunk(text: str) -> dict[str, Any]:
    return {
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 3, "totalTokenCount": 13},
    }


def request_text(body: dict[str, Any]) -> str:
    """Every text part of a request's contents, joined (what the model would read)."""
    parts = [p.get("text", "") for c in body.get("contents", []) for p in c.get("parts", []) if isinstance(p, dict)]
    return "\n".join(parts)


class GeminiStandIn:
    """`with GeminiStandIn(["reply 1", "reply 2"]) as api:` → `api.url`, `api.loop_requests`."""

    def __init__(self, script: list[str], on_request: Callable[[int], None] | None = None) -> None:
        self.script = list(script)
        self.on_request = on_request
        self.loop_requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                if ":streamGenerateContent" in self.path:
                    with standin.lock:
                        standin.loop_requests.append(body)
                        n = len(standin.loop_requests)
                        text = standin.script[n - 1] if n <= len(standin.script) else "done"
                    if standin.on_request is not None:
                        standin.on_request(n)  # e.g. let a job finish once the turn is under way
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                    self.end_headers()
                    self.wfile.write(f"data: {json.dumps(_chunk(text))}\n\n".encode())
                    self.wfile.flush()
                    self.close_connection = True
                    return
                payload = json.dumps(_chunk("ok")).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> GeminiStandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
