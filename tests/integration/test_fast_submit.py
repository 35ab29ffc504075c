"""POST /v1/jobs's fast route (api/fastsubmit.py) answers byte for byte as the full FastAPI route.

Two real gateways, one with `[gateway] fast_submit = false`, get the same raw requests in the same order:
valid bodies (taken by the fast route) and malformed or refused ones (passed on to the full route, or refused
by the shared code). Status, headers (but the date) and body must be the same bytes; only `submitted_at`
differs in an accepted job, so it is masked (with the length its digits change).
"""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path
from typing import Any

import pytest

GATE = json.dumps({"spec": {"command": ["sleep", "600"], "name": "gate"}, "context": {"cwd": "/tmp"}}).encode()

CASES: list[tuple[str, bytes, str]] = [
    # (what, body, content type)
    ("a spec", b'{"spec": {"command": ["true"], "depends_on": [1]}, "context": {"cwd": "/tmp"}}', "application/json"),
    (
        "spec text and an environment",
        json.dumps(
            {
                "spec_text": 'command: ["echo", "hi"]\ndepends_on: [gate]\nname: n1\n',
                "format": "yaml",
                "context": {"cwd": "/tmp", "env": {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}, "session": "s1"},
            }
        ).encode(),
        "application/json",
    ),
    (
        "non-ASCII text",
        '{"spec": {"command": ["echo", "é✓"], "name": "ü", "depends_on": [1]}}'.encode(),
        "application/json",
    ),
    ("a key", b'{"spec": {"command": ["true"], "idempotency_key": "k1", "depends_on": [1]}}', "application/json"),
    (
        "the same key again",
        b'{"spec": {"command": ["true"], "idempotency_key": "k1", "depends_on": [1]}}',
        "application/json",
    ),
    ("not JSON", b"not json", "application/json"),
    ("invalid UTF-8", b'{"spec": "\xff"}', "application/json"),
    ("a JSON array", b"[1, 2]", "application/json"),
    ("an empty body", b"", "application/json"),
    ("an unknown field", b'{"spec": {"command": ["true"]}, "bogus": 1}', "application/json"),
    ("spec and spec_text", b'{"spec": {"command": ["true"]}, "spec_text": "command: [true]"}', "application/json"),
    ("neither spec nor text", b'{"context": {}}', "application/json"),
    ("a spec of the wrong type", b'{"spec": "x"}', "application/json"),
    ("an unknown format", b'{"spec_text": "command: [true]", "format": "xml"}', "application/json"),
    ("a bad spec field", b'{"spec": {"comand": ["true"]}}', "application/json"),
    ("an empty command", b'{"spec": {"command": []}}', "application/json"),
    ("bad YAML", b'{"spec_text": "command: [true", "format": "yaml"}', "application/json"),
    ("a missing dependency", b'{"spec": {"command": ["true"], "depends_on": [99999]}}', "application/json"),
    ("an id past 2^63", b'{"spec": {"command": ["true"], "depends_on": [9223372036854775808]}}', "application/json"),
    ("a lone surrogate", b'{"spec": {"command": ["true"]}, "context": {"session": "s\\ud800"}}', "application/json"),
    (
        "a NUL in the environment",
        b'{"spec": {"command": ["true"]}, "context": {"env": {"A": "x\\u0000"}}}',
        "application/json",
    ),
    ("nested past the recursion limit", b'{"spec": ' + b"[" * 5000 + b"]" * 5000 + b"}", "application/json"),
    ("text/plain", b'{"spec": {"command": ["true"], "depends_on": [1]}}', "text/plain"),
    ("a charset", b'{"spec": {"command": ["true"], "depends_on": [1]}}', "application/json; charset=utf-8"),
    ("no content type", b'{"spec": {"command": ["true"], "depends_on": [1]}}', ""),
]


def _raw(sock_path: Path, body: bytes, content_type: str) -> bytes:
    """One POST /v1/jobs as bytes on the wire; the whole answer as bytes."""
    head = ["POST /v1/jobs HTTP/1.1", "Host: localhost", "Connection: close", f"Content-Length: {len(body)}"]
    if content_type:
        head.append(f"Content-Type: {content_type}")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(60)
        sock.connect(str(sock_path))
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return data


def _comparable(answer: bytes) -> bytes:
    """The answer with its date and the job's submission time masked (and the length that time changes)."""
    head, _, body = answer.partition(b"\r\n\r\n")
    length = re.search(rb"(?im)^content-length: ([0-9]+)\r?$", head)
    assert length is not None and int(length.group(1)) == len(body), head
    head = re.sub(rb"(?im)^(date|content-length): .*$", rb"\1: -", head)
    body = re.sub(rb'"submitted_at":[0-9.e+-]+', b'"submitted_at":-', body)
    return head + b"\r\n\r\n" + body


@pytest.fixture
def pair(gateway_factory: Any) -> tuple[Any, Any]:
    fast = gateway_factory()
    full = gateway_factory(config="[gateway]\nfast_submit = false\n")
    return fast, full


def test_the_fast_route_answers_every_body_as_the_full_route(pair: tuple[Any, Any]) -> None:
    fast, full = pair
    try:
        for gw in pair:
            assert b" 200 OK" in _raw(gw.socket, GATE, "application/json").split(b"\r\n")[0]
        statuses = set()
        for what, body, kind in CASES:
            one, other = _raw(fast.socket, body, kind), _raw(full.socket, body, kind)
            assert _comparable(one) == _comparable(other), what
            statuses.add(int(one.split(b" ", 2)[1]))
        assert {200, 400, 422} <= statuses  # accepted, malformed and refused bodies were all compared
        assert [j["id"] for j in fast.client.jobs(limit=100)] == [j["id"] for j in full.client.jobs(limit=100)]
    finally:
        for gw in pair:
            gw.client.cancel(1)


def test_an_accepted_job_is_answered_as_it_is_stored(gateway: Any) -> None:
    """The answer is built from the inserted row (RETURNING) when nothing changed it: it equals a later read."""
    gate = gateway.client.submit(spec={"command": ["sleep", "600"]}, context={"cwd": "/tmp"})
    try:
        job = gateway.client.submit(spec={"command": ["true"], "depends_on": [gate["id"]]}, context={"cwd": "/tmp"})
        assert job["state"] == "PENDING" and job["reason"] == "Dependency"
        stored = gateway.client.job(job["id"])
        assert {k: v for k, v in job.items() if k not in ("warnings", "notices")} == stored
        assert isinstance(job["submitted_at"], float)
    finally:
        gateway.client.cancel(gate["id"])
