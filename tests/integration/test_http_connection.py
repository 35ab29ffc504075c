"""The gateway's HTTP connection (api/connection.py): a request head over 16 KiB is refused as h11 refuses it,
whichever parser uvicorn runs (httptools has no cap of its own), and a large body is not mistaken for a large
head."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from frontdesk.api.connection import HEAD_MAX


def _exchange(sock_path: Path, *pieces: bytes) -> bytes:
    """Send pieces (stopping when the gateway closes), then read the whole answer."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(60)
        sock.connect(str(sock_path))
        for piece in pieces:
            try:
                sock.sendall(piece)
            except (BrokenPipeError, ConnectionResetError):
                break  # answered and closed before reading everything: read what it said
        data = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            data += chunk
    return data


def _status(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


@pytest.fixture
def gw(gateway_factory: Any) -> Any:
    return gateway_factory(env={"FRONTDESK_PLUGINS": "none"})


def test_a_head_over_the_cap_is_refused_and_the_gateway_carries_on(gw: Any) -> None:
    many = b"".join(b"X-Filler-%d: %s\r\n" % (i, b"v" * 100) for i in range(2000))  # ~230 KB of headers
    answer = _exchange(gw.socket, b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\n" + many + b"\r\n")
    assert _status(answer) == 400 and answer.endswith(b"Invalid HTTP request received.")
    endless = [b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\nX-Endless: "] + [b"v" * 4096] * 256  # 1 MiB
    answer = _exchange(gw.socket, *endless)
    assert _status(answer) == 400
    assert gw.client.health()["ok"]


def test_a_head_under_the_cap_and_a_large_body_are_taken(gw: Any) -> None:
    near = b"X-Filler: " + b"v" * (HEAD_MAX - 200) + b"\r\n"
    answer = _exchange(
        gw.socket, b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n" + near + b"\r\n"
    )
    assert _status(answer) == 200
    text = 'command: ["true"]\nname: big\n# ' + "x" * 600_000 + "\n"  # 600 KB in one send: head and body together
    body = json.dumps({"spec_text": text, "format": "yaml", "context": {"cwd": "/tmp"}}).encode()
    head = "POST /v1/jobs HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: application/json\r\n"
    answer = _exchange(gw.socket, (head + f"Content-Length: {len(body)}\r\n\r\n").encode() + body)
    assert _status(answer) == 200 and json.loads(answer.partition(b"\r\n\r\n")[2])["name"] == "big"
