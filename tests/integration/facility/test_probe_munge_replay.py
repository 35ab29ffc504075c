"""A MUNGE credential a client sends over TCP is good for the one request it was made for, nothing else.

A client on a node without the facility socket signs each request with a fresh MUNGE credential and sends it in
plain HTTP to the site's `url` (or `FRONTDESK_URL`). Whoever receives it (a process that took the gateway's port
while the gateway was down, a wrong `FRONTDESK_URL`, anyone on the path) could, before, replay it at the real
gateway within its TTL as ANY request of that user: submit a job as them (their code run as them), cancel their
jobs, read their logs. Now the credential carries the request it was made for (method, target, the body's
SHA-256) and the gateway takes it for that request only.

Real users and the real munged: alice's own CLI talks to a capturing listener; the test replays what it caught.
The replayed submission is a canary (a job that would only create a file in a temp directory).
"""

from __future__ import annotations

import json
import shutil
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from facility_helpers import Facility, run_as


class Catcher:
    """A TCP listener that keeps the first request head it is sent, then hangs up."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.port = self.sock.getsockname()[1]
        self.heads: list[str] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(10)
                data = b""
                while b"\r\n\r\n" not in data:
                    got = conn.recv(65536)
                    if not got:
                        break
                    data += got
                self.heads.append(data.split(b"\r\n\r\n", 1)[0].decode(errors="replace"))

    def credential(self) -> str:
        for head in self.heads:
            for line in head.split("\r\n"):
                name, _, value = line.partition(":")
                if name.lower() == "authorization" and value.strip().lower().startswith("munge "):
                    return value.strip().split(None, 1)[1]
        raise AssertionError(f"no MUNGE credential was sent: {self.heads}")

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def catcher() -> Iterator[Catcher]:
    c = Catcher()
    yield c
    c.close()


def _send(url: str, method: str, path: str, cred: str, body: bytes = b"") -> tuple[int, str]:
    host, _, port = url.split("://", 1)[1].rpartition(":")
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: MUNGE {cred}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(head.encode() + body)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    status = int(answer.split(b" ", 2)[1])
    return status, answer.split(b"\r\n\r\n", 1)[-1].decode(errors="replace")


def _caught(facility: Facility, catcher: Catcher, *args: str) -> str:
    env = {"FRONTDESK_URL": f"http://127.0.0.1:{catcher.port}", "FRONTDESK_AUTH": "munge"}
    r = facility.cli("alice", *args, env=env)
    assert r.returncode != 0  # the catcher never answers
    return catcher.credential()


def test_a_caught_credential_cannot_be_replayed_as_another_request(facility: Facility, catcher: Catcher) -> None:
    cred = _caught(facility, catcher, "status", "--json")
    sandbox = Path(tempfile.mkdtemp(prefix="fdprobe-munge-", dir="/tmp"))
    try:
        sandbox.chmod(0o777)
        canary = sandbox / "ran-as-alice"
        spec = {"command": ["touch", str(canary)], "name": "fdprobe-munge-replay"}
        body = json.dumps({"spec": spec, "context": {"cwd": str(sandbox)}}).encode()
        status, answer = _send(facility.url, "POST", "/v1/jobs", cred, body)
        assert status == 401, answer  # was 200: a job stored and run as alice
        assert "alice" not in answer
        jobs = facility.root_client().request("GET", "/v1/jobs?name=fdprobe-munge-replay")
        assert jobs == [], jobs
    finally:
        shutil.rmtree(sandbox, ignore_errors=True)


def test_a_caught_credential_cannot_read_another_path(facility: Facility, catcher: Catcher) -> None:
    cred = _caught(facility, catcher, "status", "--json")
    status, answer = _send(facility.url, "GET", "/v1/events?since=0", cred)
    assert status == 401, answer


def test_a_bound_credential_works_once_for_its_own_request(facility: Facility) -> None:
    """The honest path: alice's credential made for GET /v1/jobs is taken for it; munged refuses a replay."""
    from frontdesk.wire import request_binding

    script = (
        "import json, sys\n"
        "from frontdesk.identity import munge_credential\n"
        "from frontdesk.wire import request_binding\n"
        "print(munge_credential(request_binding('GET', '/v1/jobs', b'')))\n"
    )
    r = run_as("alice", ["/usr/bin/python3", "-c", script])
    assert r.returncode == 0, r.stderr
    cred = r.stdout.strip()
    status, answer = _send(facility.url, "GET", "/v1/jobs", cred)
    assert status == 200, answer
    assert _send(facility.url, "GET", "/v1/jobs", cred)[0] == 401  # munged: replayed
    assert request_binding("GET", "/v1/jobs", b"") != request_binding("GET", "/v1/jobs?x=1", b"")
