"""The gateway's HTTP connection (api/connection.py): a request head over 16 KiB is refused as h11 refuses it,
whichever parser uvicorn runs (httptools has no cap of its own), and a large body is not mistaken for a large
head."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

from frontdesk.api.connection import HEAD_MAX

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "faults"))
from fault_helpers import exchange  # noqa: E402


def _status(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


@pytest.fixture
def gw(gateway_factory: Any) -> Any:
    return gateway_factory(env={"FRONTDESK_PLUGINS": "none"})


def test_a_head_over_the_cap_is_refused_and_the_gateway_carries_on(gw: Any) -> None:
    many = b"".join(b"X-Filler-%d: %s\r\n" % (i, b"v" * 100) for i in range(2000))  # ~230 KB of headers
    answer = exchange(gw.socket, b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\n" + many + b"\r\n")
    assert _status(answer) == 400 and answer.endswith(b"Invalid HTTP request received.")
    endless = [b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\nX-Endless: "] + [b"v" * 4096] * 256  # 1 MiB
    answer = exchange(gw.socket, *endless)
    assert _status(answer) == 400
    assert gw.client.health()["ok"]


def test_a_head_under_the_cap_and_a_large_body_are_taken(gw: Any) -> None:
    near = b"X-Filler: " + b"v" * (HEAD_MAX - 200) + b"\r\n"
    answer = exchange(
        gw.socket, b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n" + near + b"\r\n"
    )
    assert _status(answer) == 200
    text = 'command: ["true"]\nname: big\n# ' + "x" * 600_000 + "\n"  # 600 KB in one send: head and body together
    body = json.dumps({"spec_text": text, "format": "yaml", "context": {"cwd": "/tmp"}}).encode()
    head = "POST /v1/jobs HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: application/json\r\n"
    answer = exchange(gw.socket, (head + f"Content-Length: {len(body)}\r\n\r\n").encode() + body)
    assert _status(answer) == 200 and json.loads(answer.partition(b"\r\n\r\n")[2])["name"] == "big"


def _head_and_some_body(sock_path: Path, request: bytes, want: bytes) -> tuple[bytes, bytes]:
    """Send one request on a stream that stays open; read until `want` shows in the body (or 30 s)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        sock.connect(str(sock_path))
        sock.sendall(request)
        data = b""
        while want not in data.partition(b"\r\n\r\n")[2]:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return head.lower(), body


def test_a_stream_to_an_http10_client_is_close_delimited_and_chunked_for_http11(gw: Any) -> None:
    """HTTP/1.0 has no chunked coding (the shims and the facility subscription speak it): a streamed answer
    comes as its bytes, ended by the close; an HTTP/1.1 client still gets chunks."""
    job = gw.client.submit(spec={"command": ["true"], "name": "http10"}, context={"cwd": "/tmp"})["id"]
    path = f"/v1/events?follow=true&job={job}".encode()
    head, body = _head_and_some_body(gw.socket, b"GET " + path + b" HTTP/1.0\r\n\r\n", b"job.submitted")
    assert head.startswith(b"http/1.1 200") and b"transfer-encoding" not in head, head
    assert body.startswith((b"id:", b"event:", b"data:", b":")), body[:80]  # no chunk-size line first
    head, body = _head_and_some_body(gw.socket, b"GET " + path + b" HTTP/1.1\r\nHost: x\r\n\r\n", b"job.submitted")
    assert b"transfer-encoding: chunked" in head, head
    assert body.split(b"\r\n", 1)[0].strip() and all(c in b"0123456789abcdef" for c in body.split(b"\r\n", 1)[0])
