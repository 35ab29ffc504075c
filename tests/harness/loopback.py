"""The loopback HTTP server that every model-API stand-in here is built on (Anthropic, OpenAI Responses, Gemini).

A stand-in subclasses `Loopback` and answers `post(exchange, body)`: the request body is already read and parsed
(`{}` when it is not JSON), and the `Exchange` sends a JSON answer (`send_json`) or a server-sent event stream
(`send_events`, which closes the connection after it). `start()` binds 127.0.0.1 on a free port and serves it from
a daemon thread; `with standin:` starts and stops it. Stdlib only; one thread per request.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Self

__all__ = ["Exchange", "Loopback"]


class Exchange(BaseHTTPRequestHandler):
    """One request; `standin` is the `Loopback` that answers it."""

    standin: ClassVar[Loopback]

    def log_message(self, *args: Any) -> None:
        pass

    def body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b"{}"
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            return {}
        return body if isinstance(body, dict) else {}

    def send_json(self, obj: Any, code: int = 200) -> None:
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_events(self, events: Iterable[tuple[str | None, Any]], flush_each: bool = False) -> None:
        """A server-sent event stream, one `event: NAME` (left out where NAME is None) and `data: JSON` each."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for name, data in events:
            head = f"event: {name}\n" if name is not None else ""
            self.wfile.write(f"{head}data: {json.dumps(data)}\n\n".encode())
            if flush_each:
                self.wfile.flush()
        self.wfile.flush()
        self.close_connection = True

    def do_GET(self) -> None:
        self.send_json(self.standin.listing)

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        self.standin.post(self, self.body())


class Loopback:
    """The server. Subclasses set `path` (what `url` ends in), `listing` (the answer to GET) and `post`."""

    path: ClassVar[str] = ""
    listing: ClassVar[Any] = {"data": [], "has_more": False}
    http_version: ClassVar[str] = "HTTP/1.1"
    _server: ThreadingHTTPServer | None = None

    def post(self, exchange: Exchange, body: dict[str, Any]) -> None:
        raise NotImplementedError

    @property
    def url(self) -> str:
        assert self._server is not None, "start() the stand-in first"
        return f"http://127.0.0.1:{self._server.server_address[1]}{self.path}"

    def start(self) -> Self:
        handler = type("Handler", (Exchange,), {"standin": self, "protocol_version": self.http_version})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
