"""The TCP listener's TLS, started per connection after the peer is counted (docs/facility.md, "TLS").

With `ssl=` on the server, asyncio runs the handshake before the HTTP protocol sees the connection, so the cap
of open connections per TCP host (connection.py) counted a connection only once its handshake was done: any
host could hold thousands of half-made handshakes (each a file descriptor, each up to the handshake timeout) and
starve the gateway. Here a TCP connection is counted when it is accepted: a host's pending handshakes count
against MAX_PER_PEER, all hosts' together against MAX_PENDING, and a connection over either is closed at once;
then TLS starts (`loop.start_tls`) and the HTTP protocol takes over the TLS transport.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Callable

from frontdesk.api.connection import MAX_PER_PEER
from frontdesk.tls import HANDSHAKE_S

__all__ = ["MAX_PENDING", "gate"]

MAX_PENDING = 1024
"""Handshakes in flight from all hosts together."""
_PENDING: dict[str, int] = {}


def gate(make: Callable[[], asyncio.Protocol], tls: ssl.SSLContext) -> Callable[[], asyncio.Protocol]:
    """A protocol factory for the TCP listener: count the peer, shake hands, hand over to `make()`'s protocol."""
    return lambda: _Gate(make, tls)


class _Gate(asyncio.Protocol):
    def __init__(self, make: Callable[[], asyncio.Protocol], tls: ssl.SSLContext) -> None:
        self.make, self.tls = make, tls
        self.host: str | None = None
        self.early: list[bytes] = []
        self.task: asyncio.Task[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        addr = transport.get_extra_info("peername")
        host = str(addr[0] if isinstance(addr, tuple) and addr else addr)
        if _PENDING.get(host, 0) >= MAX_PER_PEER or sum(_PENDING.values()) >= MAX_PENDING:
            transport.abort()  # nothing read, nothing said: a handshake's worth of bytes is not spent on it
            return
        _PENDING[host] = _PENDING.get(host, 0) + 1
        self.host = host
        self.task = asyncio.get_running_loop().create_task(self._upgrade(transport))

    async def _upgrade(self, raw: asyncio.Transport) -> None:
        loop = asyncio.get_running_loop()
        try:
            tls = await loop.start_tls(raw, self, self.tls, server_side=True, ssl_handshake_timeout=HANDSHAKE_S)
        except (OSError, ssl.SSLError, TimeoutError, ConnectionError, RuntimeError):
            raw.abort()  # a plain-text client, a failed or slow handshake: closed, nothing else
            return
        finally:
            self._done()
        if tls is None:
            raw.abort()
            return
        proto = self.make()
        tls.set_protocol(proto)
        proto.connection_made(tls)
        for data in self.early:  # what came right behind the handshake, before the hand-over
            if isinstance(proto, asyncio.Protocol) and not tls.is_closing():
                proto.data_received(data)
        self.early.clear()

    def _done(self) -> None:
        if self.host is not None:
            _PENDING[self.host] -= 1
            if _PENDING[self.host] <= 0:
                del _PENDING[self.host]
            self.host = None

    def data_received(self, data: bytes) -> None:
        self.early.append(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()
        with contextlib.suppress(KeyError):
            self._done()
