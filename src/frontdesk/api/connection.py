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

- **One write per answer.** uvicorn writes an answer's head and its body apart. A client blocked on the answer
  (a long-poll: `POST /v1/wait` at a job's end) is woken by the head, often on the gateway's own CPU, and reads
  it while the body is not written yet; the gateway writes the body when it runs again, and the client is woken
  a second time: about 0.8 ms of a job's end at p50 on these 2-core hosts (issue 21). An answer whose length
  is known (`Content-Length`) has its head held until its body is written (`_Corked`); a streamed one still
  sends its head at once. (Tried earlier as a gain in throughput, where it gave none.)
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable
from typing import Any

from frontdesk.api.auth import PEER_KEY
from frontdesk.identity import peer_credentials

__all__ = ["HEAD_MAX", "MAX_PER_PEER", "peer_protocol"]

Send = Callable[[dict[str, Any]], Awaitable[None]]

HEAD_MAX = 16 * 1024
"""Bytes a request head (request line and headers) may take: h11's cap (uvicorn's default for it)."""

_TOO_BIG = "Invalid HTTP request received."
"""What uvicorn answers to a head h11 refuses: the same words whichever parser runs."""


def peer_protocol() -> type[Any]:
    """uvicorn's HTTP protocol, plus the Unix-socket peer's credentials in each request's scope."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    class PeerCredProtocol(AutoHTTPProtocol):  # type: ignore[misc, valid-type]
        _peer: object = None
        """This connection's key in `_OPEN` (None: not counted)."""
        _refused = False
        """Over the cap: answered 429 at once, closed once its request came (or a second later)."""

        def data_received(self, data: bytes) -> None:
            if self._refused:
                raw: Any = self.transport
                raw.close()
                return
            super().data_received(data)

        def connection_made(self, transport: asyncio.Transport) -> None:
            super().connection_made(transport)
            cred = peer_credentials(transport.get_extra_info("socket"))
            if not _admit(self, transport, cred):
                return
            corked = self.transport = _Corked(transport)  # what each request's cycle writes to
            self.app = _peer_app(self.app, cred, corked)  # type: ignore[has-type]

        def connection_lost(self, exc: Exception | None) -> None:
            if self._peer is not None:
                _OPEN[self._peer] -= 1
                if _OPEN[self._peer] <= 0:
                    del _OPEN[self._peer]
                self._peer = None
            super().connection_lost(exc)

    if not hasattr(AutoHTTPProtocol, "on_headers_complete"):
        return PeerCredProtocol  # h11: it caps the head itself

    return _capped_head(PeerCredProtocol)


def _capped_head(base: type[Any]) -> type[Any]:
    """`base`, refusing a request head over HEAD_MAX (httptools does not cap it)."""

    class CappedHeadProtocol(base):  # type: ignore[misc]
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
            size = len(self.url) + 16 + sum(len(n) + len(v) + 4 for n, v in self.headers)  # what the head held
            if size > HEAD_MAX:  # a whole head in one read: the parser took it before data_received could count
                import httptools

                raise httptools.HttpParserCallbackError(_TOO_BIG)  # uvicorn answers it 400, as h11 would
            super().on_headers_complete()
            if self.scope.get("http_version") == "1.0" and self.cycle is not None:
                _close_delimited(self.cycle)

    return CappedHeadProtocol


MAX_PER_PEER = 512
"""Connections one peer (a Unix uid; a TCP client host) may hold open at once. Without a cap one user's idle
connections (or `events?follow` streams) used up the gateway's file descriptors: it answered nobody else.
Root and the gateway's own uid (shepherds, the gateway's own clients) are not counted."""

_OPEN: dict[object, int] = {}
_FULL = (
    b"HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\nconnection: close\r\n"
    b"content-length: %d\r\n\r\n%s"
)


def _admit(proto: Any, transport: asyncio.Transport, cred: Any) -> bool:
    """Count the connection against its peer; over MAX_PER_PEER answer 429 in one line and close it."""
    if cred is not None:
        if cred.uid in (0, os.getuid()):
            return True
        peer: object = ("uid", cred.uid)
    else:
        addr = transport.get_extra_info("peername")
        peer = ("host", addr[0] if isinstance(addr, tuple) and addr else str(addr))
    if _OPEN.get(peer, 0) >= MAX_PER_PEER:
        body = json.dumps(
            {"error": "rate_limited", "message": f"too many open connections from one peer (at most {MAX_PER_PEER})"}
        ).encode()
        transport.write(_FULL % (len(body), body))  # the client reads it after sending its request
        proto._refused = True
        if transport.can_write_eof():
            transport.write_eof()
        asyncio.get_running_loop().call_later(1.0, transport.close)  # held at most a second
        return False
    _OPEN[peer] = _OPEN.get(peer, 0) + 1
    proto._peer = peer
    return True


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


def _peer_app(inner: Any, cred: Any, corked: _Corked) -> Any:
    """The app of one connection: the peer's credentials in each request's scope, each answer in one write."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        scope[PEER_KEY] = cred
        await inner(scope, receive, _one_write(send, corked))

    return app


class _Corked:
    """A connection's transport that holds an answer's head until its body is written: one write, one wake-up."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self._held: list[bytes] | None = None

    def hold(self) -> None:
        """Keep what is written from now on until `release` (an answer's head, until its body comes)."""
        self._held = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._held is None:
            self._transport.write(data)
        else:
            self._held.append(bytes(data))

    def release(self) -> None:
        """Write what was held, in one write."""
        held, self._held = self._held, None
        if held:
            self._transport.write(b"".join(held))

    def close(self) -> None:
        self.release()  # uvicorn closes a `Connection: close` answer inside its last body write
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def _one_write(send: Send, corked: _Corked) -> Send:
    """The ASGI `send` of one request: an answer's head with a Content-Length waits for the body's first piece."""

    async def whole(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            if any(name.lower() == b"content-length" for name, _ in message.get("headers", ())):
                corked.hold()
            await send(message)
        elif message["type"] == "http.response.body":
            try:
                await send(message)
            finally:
                corked.release()
        else:
            await send(message)

    return whole
