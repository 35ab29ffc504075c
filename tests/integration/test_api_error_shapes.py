"""Every refusal the gateway sends is the one error JSON ({"error", "message"}), also for what the web framework
refuses before a route runs (no such route, a wrong method, a body that does not parse); the CLI then prints
one line with the documented exit code (not-found 3, bad input 2) instead of `HTTP 404: 'Not Found'`."""

from __future__ import annotations

import json
import socket
from typing import Any


def _raw(gw: Any, method: str, path: str, body: bytes = b"") -> tuple[int, Any]:
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(30)
        s.connect(str(gw.socket))
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        )
        s.sendall(head.encode() + b"Connection: close\r\n\r\n" + body)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head_text, _, rest = data.partition(b"\r\n\r\n")
    return int(head_text.split()[1]), json.loads(rest)


def test_framework_refusals_are_the_error_json(gateway: Any) -> None:
    cases = [
        ("GET", "/v1/no-such-route", b"", 404, "not_found"),
        ("GET", "/v1/sessions/a/../../v1/health", b"", 404, "not_found"),
        ("DELETE", "/v1/health", b"", 405, "bad_input"),
        ("POST", "/v1/jobs", b"[" * 100_000, 400, "bad_input"),
    ]
    for method, path, body, status, code in cases:
        got_status, answer = _raw(gateway, method, path, body)
        assert got_status == status and set(answer) == {"error", "message"}, (path, answer)
        assert answer["error"] == code and answer["message"] and "\n" not in answer["message"], answer
    assert gateway.client.health()["ok"]


def test_the_cli_says_one_line_with_the_not_found_exit_code(gateway: Any) -> None:
    r = gateway.cli("sessions", "show", "../../etc")
    assert r.returncode == 3, (r.returncode, r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1 and "HTTP 404" not in r.stderr, r.stderr
