"""A loopback stand-in for the Gemini API (generativelanguage v1beta), enough for the real `gemini` CLI.

`gemini` (0.61.0) talks to it with GOOGLE_GEMINI_BASE_URL=<url>, GEMINI_API_KEY=<any> and
`security.auth.selectedType = "gemini-api-key"` in its settings. The agent loop streams
`POST /v1beta/models/<model>:streamGenerateContent?alt=sse`; those requests are recorded and answered
from a script of texts; the CLI's utility calls (`:generateContent`: routing, titles) get a short text.
Stdlib only; run in a thread by the tests.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from loopback import Exchange, Loopback

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


class GeminiStandIn(Loopback):
    """`with GeminiStandIn(["reply 1", "reply 2"]) as api:` → `api.url`, `api.loop_requests`."""

    http_version = "HTTP/1.0"

    def __init__(self, script: list[str], on_request: Callable[[int], None] | None = None) -> None:
        self.script = list(script)
        self.on_request = on_request
        self.loop_requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def post(self, exchange: Exchange, body: dict[str, Any]) -> None:
        if ":streamGenerateContent" not in exchange.path:
            exchange.send_json(_chunk("ok"))
            return
        with self.lock:
            self.loop_requests.append(body)
            n = len(self.loop_requests)
            text = self.script[n - 1] if n <= len(self.script) else "done"
        if self.on_request is not None:
            self.on_request(n)  # e.g. let a job finish once the turn is under way
        exchange.send_events([(None, _chunk(text))])
