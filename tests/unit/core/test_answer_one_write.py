"""Issue 21: the gateway's HTTP protocol (api/connection.py) writes an answer whose length is known in ONE
write, head and body together, so a client blocked on it (a long-poll at a job's end) is woken once; a
streamed answer still sends its head at once. Runs uvicorn's own protocol class over a real socket pair;
the transport records each write the kernel would see as one send()."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest
from uvicorn.config import Config
from uvicorn.server import ServerState

from frontdesk.api.connection import peer_protocol


class _Recording(asyncio.Transport):
    """The transport seam: each write() is kept as it came (one send each on a socket)."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self.sock = sock
        self.writes: list[bytes] = []
        self.closed = False
        self.closed_with_answer: bool | None = None

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self.sock if name == "socket" else default

    def write(self, data: Any) -> None:
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def _whole(scope: dict[str, Any], receive: Any, send: Any) -> None:
    body = b'{"done":true}'
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await asyncio.sleep(0)  # the app may pause between the two: the head still waits for the body
    await send({"type": "http.response.body", "body": body})


async def _streamed(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
    await asyncio.sleep(0)
    await send({"type": "http.response.body", "body": b"data: 1\n\n", "more_body": True})
    await send({"type": "http.response.body", "body": b"", "more_body": False})


def _exchange(app: Any, request: bytes) -> _Recording:
    async def run() -> _Recording:
        config = Config(app=app, lifespan="off", log_level="warning")
        config.load()
        proto = peer_protocol()(config=config, server_state=ServerState(), app_state={})
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        with a, b:
            transport = _Recording(a)
            proto.connection_made(transport)
            proto.data_received(request)
            for _ in range(100):
                if proto.cycle is not None and proto.cycle.response_complete:
                    break
                await asyncio.sleep(0.01)
            transport.closed_with_answer = transport.closed  # before the test ends the connection
            proto.connection_lost(None)
        return transport

    return asyncio.run(run())


@pytest.mark.parametrize("close", [False, True])
def test_an_answer_with_a_length_leaves_in_one_write(close: bool) -> None:
    extra = b"Connection: close\r\n" if close else b""
    t = _exchange(_whole, b"GET /v1/x HTTP/1.1\r\nHost: x\r\n" + extra + b"\r\n")
    assert len(t.writes) == 1, t.writes
    head, _, body = t.writes[0].partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and body == b'{"done":true}'
    assert t.closed_with_answer == close


def test_a_streamed_answer_sends_its_head_at_once() -> None:
    t = _exchange(_streamed, b"GET /v1/events HTTP/1.1\r\nHost: x\r\n\r\n")
    assert t.writes[0].startswith(b"HTTP/1.1 200") and t.writes[0].endswith(b"\r\n\r\n")
    assert b"data: 1" in t.writes[1]
