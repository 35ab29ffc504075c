"""One HTTP connection to the gateway: uvicorn's protocol with the peer's credentials and a cap on the request head.

- **Peer credentials.** SO_PEERCRED is read once per connection and put in every request's ASGI scope
  (`scope["frontdesk.peer"]`, read by `api.auth.Authenticator`).
- **Head cap.** uvicorn picks httptools (a C parser, about 0.1 ms less gateway CPU per request than h11) when
  it is installed. h11 refuses a request head over 16 KiB; uvicorn's httptools protocol has no such cap, so a
  local client could grow the gateway's memory with an endless header. The same cap is kept here: a head still
  incomplete after `HEAD_MAX` bytes is answered 400 and the connection closed, as h11 does.

- **HTTP/1.0 streams.** uvicorn's httptools protocol chunks any answer without a Content-Length, whatever the
  request's version; an HTTP/1.0 client (the shims, the facility subscription) cannot read chunks. A streamed
  answer to an HTTP/1.0 request is sent close-delimited instead, as h11 does (`_close_delimited`).

Tried and not kept: sending an answer's head and body in one `send` (uvicorn writes them apart, so a waiting
client is woken twice): no gain in gateway CPU or throughput in interleaved runs (issue 21, docs/performance.md).
"""

from __future__ import annotations

import asyncio
from typing import Any

from frontdesk.api.auth import PEER_KEY
from frontdesk.identity import peer_credentials

__all__ = ["HEAD_MAX", "peer_protocol"]

HEAD_MAX = 16 * 1024
"""Bytes a request head (request line and headers) may take: h11's cap (uvicorn's default for it)."""

_TOO_BIG = "Invalid HTTP request received."
"""What uvicorn answers to a head h11 refuses: the same words whichever parser runs."""


def peer_protocol() -> type[Any]:
    """uvicorn's HTTP protocol, plus the Unix-socket peer's credentials in each request's scope."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    class PeerCredProtocol(AutoHTTPProtocol):  # type: ignore[misc, valid-type]
        def connection_made(self, transport: asyncio.Transport) -> None:
            super().connection_made(transport)
            cred = peer_credentials(transport.get_extra_info("socket"))
            inner: Any = self.app  # type: ignore[has-type]

            async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
                scope[PEER_KEY] = cred
                await inner(scope, receive, send)

            self.app = app

    if not hasattr(AutoHTTPProtocol, "on_headers_complete"):
        return PeerCredProtocol  # h11: it caps the head itself

    class CappedHeadProtocol(PeerCredProtocol):
        _head: int | None = 0
        """Bytes of the current request's head seen so far; None once its head is complete."""

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self._head is not None:  # this request's head is still coming
                self._head += len(data)
                if self._head > HEAD_MAX and not self.transport.is_closing():
                    self.send_400_response(_TOO_BIG)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._head = 0

        def on_headers_complete(self) -> None:
            self._head = None
            super().on_headers_complete()
            if self.scope.get("http_version") == "1.0" and self.cycle is not None:
                _close_delimited(self.cycle)

    return CappedHeadProtocol


_UNBOUNDED = 1 << 62
"""The body length a close-delimited answer is allowed while it streams (uvicorn counts down from it)."""


def _close_delimited(cycle: Any) -> None:
    """Make uvicorn's httptools cycle send an answer without a Content-Length to an HTTP/1.0 request as its bytes,
    ended by closing the connection (HTTP/1.0 has no chunked coding; the connection closes after it anyway)."""
    send = cycle.send

    async def send_10(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start" and not any(
            name.lower() == b"content-length" for name, _ in message.get("headers", ())
        ):
            cycle.chunked_encoding = False  # uvicorn then neither adds transfer-encoding nor frames the body
            cycle.expected_content_length = _UNBOUNDED
        elif (
            message["type"] == "http.response.body"
            and not message.get("more_body", False)
            and cycle.expected_content_length >= _UNBOUNDED >> 1
        ):
            cycle.expected_content_length = len(message.get("body", b""))  # the last piece ends it exactly
        await send(message)

    cycle.send = send_10
