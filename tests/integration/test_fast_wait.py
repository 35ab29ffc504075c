"""POST /v1/wait's fast route (api/fastwait.py) answers byte for byte as the full FastAPI route.

One real gateway gets each raw request twice: as `application/json` (which the fast route takes when the body
is well formed) and as `application/json; charset=utf-8` (which it always passes on to the FastAPI route).
Status, headers (but the date) and body must be the same bytes: long-polls parked together and woken by one
job's end, waits on ended and running jobs, errors, and malformed bodies (which both routes leave to FastAPI).
"""

from __future__ import annotations

import json
import re
import shlex
import socket
import threading
from pathlib import Path
from typing import Any

from frontdesk.api.fastsubmit import parsed_body
from frontdesk.api.jobs import WaitBody

FAST, FULL = "application/json", "application/json; charset=utf-8"


def _send(sock_path: Path, body: bytes, content_type: str) -> socket.socket:
    head = ["POST /v1/wait HTTP/1.1", "Host: localhost", "Connection: close", f"Content-Length: {len(body)}"]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(60)
    sock.connect(str(sock_path))
    sock.sendall(("\r\n".join(head) + f"\r\nContent-Type: {content_type}\r\n\r\n").encode() + body)
    return sock


def _answer(sock: socket.socket) -> bytes:
    with sock:
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = re.search(rb"(?im)^content-length: ([0-9]+)\r?$", head)
    assert length is not None and int(length.group(1)) == len(body), data[:300]
    return re.sub(rb"(?im)^date: .*$", b"date: -", head) + b"\r\n\r\n" + body


def _both(gw: Any, body: bytes) -> tuple[bytes, bytes]:
    return _answer(_send(gw.socket, body, FAST)), _answer(_send(gw.socket, body, FULL))


def _body(**fields: Any) -> bytes:
    return json.dumps(fields).encode()


def test_the_fast_route_answers_as_the_full_route(gateway: Any, workdir: Path) -> None:
    c = gateway.client
    gate = workdir / "gate"
    cmd = f"echo 'loss=0.5 é✓'; while [ ! -e {shlex.quote(str(gate))} ]; do sleep 0.02; done; echo done >&2"
    running = c.submit(spec={"command": ["sh", "-c", cmd]}, context={"cwd": str(workdir)})["id"]
    gateway.wait_state(running, {"RUNNING"})

    parked = [_send(gateway.socket, _body(ids=[running], timeout=60), kind) for kind in (FAST, FULL, FAST, FULL)]
    answers: list[bytes] = [b""] * len(parked)
    readers = [
        threading.Thread(target=lambda i=i, s=s: answers.__setitem__(i, _answer(s))) for i, s in enumerate(parked)
    ]
    for r in readers:
        r.start()
    now = _both(gateway, _body(ids=[running], timeout=0))  # still running: done false, pending
    assert now[0] == now[1] and b'"done":false' in now[0]
    gate.touch()  # the parked long-polls are answered by the job's end, each with the report it handed over
    for r in readers:
        r.join(60)
    assert b'"state":"COMPLETED"' in answers[0] and len(set(answers)) == 1, answers

    other = c.submit(spec={"command": ["sleep", "600"]}, context={"cwd": str(workdir)})["id"]
    try:
        cases = [
            _body(ids=[running]),  # ended: read back from the store
            _body(ids=[running, running], mode="all"),  # one job named twice
            _body(ids=[running, other], mode="any", timeout=0),
            _body(ids=[running, other], mode="all", timeout=0.01),
            _body(ids=[999999], timeout=0),  # no such job: 404
            _body(ids=[2**63], timeout=0),  # past SQLite's integers: no such job either
            _body(ids=[], timeout=0),  # refused by validation: both go to FastAPI
            _body(ids=[running], mode="some"),
            _body(ids=[running], timeout=-1),
            _body(ids=[running], timeout=7 * 86400 + 1),
            _body(ids=[running], bogus=1),
            b"[1, 2]",
            b"not json",
            b"",
        ]
        statuses = set()
        for body in cases:
            fast, full = _both(gateway, body)
            assert fast == full, body
            statuses.add(int(fast.split(b" ", 2)[1]))
        assert {200, 400, 404} <= statuses
    finally:
        c.cancel(other)


def test_the_fast_route_takes_exactly_the_well_formed_bodies() -> None:
    def scope(kind: bytes) -> dict[str, Any]:
        return {"headers": [(b"content-type", kind)]}

    good = parsed_body(scope(b"application/json"), _body(ids=[1, "2"], mode="any", timeout=1), WaitBody)
    assert good is not None and good.ids == [1, 2] and good.mode == "any"
    assert parsed_body(scope(FULL.encode()), _body(ids=[1]), WaitBody) is None
    for bad in (_body(ids=[]), _body(ids=[1], bogus=1), _body(ids=[1], timeout=-1), b"[1]", b"x", b""):
        assert parsed_body(scope(b"application/json"), bad, WaitBody) is None, bad
