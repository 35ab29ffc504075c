"""A JSON request body that writes a key twice, at any depth, is refused in one line (400 bad_input) by the real
gateway before any route runs, on the fast submit path and the full routes alike; nothing is stored. Python's
json keeps the last of a repeated key, so without this `{"spec": {"command": A, "command": B}}` would run B."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest

_CMD_A = '["sh", "-c", "echo a"]'
_CMD_B = '["sh", "-c", "echo b"]'


def _b(text: str) -> str:
    return text.replace("@A", _CMD_A).replace("@B", _CMD_B)


def _raw(gw: Any, method: str, path: str, body: bytes) -> tuple[int, Any]:
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(30)
        s.connect(str(gw.socket))
        head = f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        head += f"Content-Length: {len(body)}\r\n"
        s.sendall(head.encode() + b"Connection: close\r\n\r\n" + body)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head_text, _, rest = data.partition(b"\r\n\r\n")
    return int(head_text.split()[1]), json.loads(rest)


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/jobs", _b('{"spec": {"command": @A, "command": @B}}')),  # the fast route's body
        ("/v1/jobs", _b('{"spec": {"command": @A}, "spec": {"command": @B}}')),
        ("/v1/jobs", _b('{"spec": {"command": @A, "env": {"X": "1", "X": "2"}}}')),  # deeper
        ("/v1/jobs", _b('{"spec": {"command": @A}, "context": {"a": [{"k": 1, "k": 2}]}}')),  # in a list
        ("/v1/jobs/batch", _b('{"jobs": [{"spec": {"command": @A, "command": @B}}]}')),
        ("/v1/tokens", '{"name": "t", "name": "u"}'),
    ],
)
def test_a_repeated_key_is_refused_and_nothing_stored(gateway: Any, path: str, body: str) -> None:
    before = len(gateway.client.jobs())
    status, answer = _raw(gateway, "POST", path, body.encode())
    assert status == 400 and answer["error"] == "bad_input", (status, answer)
    assert "duplicate key" in answer["message"] and "\n" not in answer["message"], answer
    assert len(gateway.client.jobs()) == before


def test_distinct_keys_still_submit(gateway: Any) -> None:
    status, answer = _raw(gateway, "POST", "/v1/jobs", _b('{"spec": {"command": @A}}').encode())
    assert status == 200 and answer.get("id"), (status, answer)
