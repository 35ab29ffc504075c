"""Every route of the real gateway that takes a JSON body refuses one that writes a key twice, at any depth, in one
line (400 bad_input), and stores nothing; the same body without the repeat is not refused for a repeat.

The routes are walked from the gateway's own OpenAPI document with every built-in plug-in loaded, not listed by
hand: a route added later with a body is checked the day it appears. A mutating route the document shows without
a body either reads its raw body as JSON itself (RAW_JSON: checked the same way) or takes no JSON body
(NO_JSON_BODY, with why); a new one in neither list fails here, so whoever adds it says which it is. Each body is
sent as `application/json` (the fast submit and wait routes take that) and with a charset (their full routes)."""

from __future__ import annotations

import json
import socket
import sqlite3
from pathlib import Path
from typing import Any

RAW_JSON = {("POST", "/v1/fs/{op}")}
"""Routes that read their raw body and parse it as JSON themselves (storage's operators)."""

NO_JSON_BODY = {
    ("POST", "/v1/jobs/{job_id}/cancel"): "the id is in the path",
    ("DELETE", "/v1/memory/lessons/{lesson_id}"): "the id is in the path",
    ("POST", "/v1/policy/reload"): "reads frontdesk.toml",
    ("POST", "/v1/sessions/{sid}/campaign/suspend"): "the id is in the path",
    ("POST", "/v1/slurm/text/squeue"): "NUL-separated squeue arguments, not JSON",
}

REPEATED = b'{"a": [{"k": 1, "k": 2}], "b": 1}'
ONCE = b'{"a": [{"k": 1}], "b": 1}'
KINDS = ("application/json", "application/json; charset=utf-8")


def _raw(gw: Any, method: str, path: str, body: bytes, kind: str) -> tuple[int, Any]:
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(30)
        s.connect(str(gw.socket))
        head = f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: {kind}\r\nContent-Length: {len(body)}\r\n"
        s.sendall(head.encode() + b"Connection: close\r\n\r\n" + body)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head_text, _, rest = data.partition(b"\r\n\r\n")
    return int(head_text.split()[1]), json.loads(rest) if rest.startswith(b"{") else rest


def _operations(gw: Any) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(method, path) of every mutating operation: those the document gives a body, and the others."""
    doc = gw.client.request("GET", "/openapi.json")
    with_body, without = [], []
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            if method in ("post", "put", "patch", "delete"):
                (with_body if "requestBody" in op else without).append((method.upper(), path))
    return with_body, without


def _filled(path: str) -> str:
    return path.replace("{job_id}", "1").replace("{lesson_id}", "1").replace("{sid}", "s1").replace("{op}", "find")


def _stored(home: Path) -> dict[str, int]:
    """Rows of every table of every SQLite file in the gateway's home, and the size of every other file there."""
    out: dict[str, int] = {}
    for path in sorted(home.rglob("*")):
        if not path.is_file() or path.suffix in (".log", ".sock", ".lock") or path.name.endswith(("-wal", "-shm")):
            continue
        if path.suffix != ".db":
            out[str(path)] = path.stat().st_size
            continue
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
                out[f"{path.name}:{table}"] = db.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]
    return out


def test_every_body_route_refuses_a_repeated_key(gateway: Any) -> None:
    with_body, without = _operations(gateway)
    unlisted = sorted(set(without) - RAW_JSON - set(NO_JSON_BODY))
    assert not unlisted, f"a mutating route without a body in OpenAPI: add it to RAW_JSON or NO_JSON_BODY: {unlisted}"
    checked = sorted(set(with_body) | (RAW_JSON & set(without)))
    assert ("POST", "/v1/jobs") in checked and ("POST", "/v1/wait") in checked and len(checked) >= 15, checked
    before = _stored(gateway.home)
    for method, path in checked:
        for kind in KINDS:
            status, answer = _raw(gateway, method, _filled(path), REPEATED, kind)
            assert status == 400 and isinstance(answer, dict), (method, path, kind, status, answer)
            assert answer == {"error": "bad_input", "message": "request body: duplicate key 'k'"}, (path, answer)
    assert _stored(gateway.home) == before
    for method, path in checked:  # the refusal was the repeat's: the same body once each is judged on its merits
        status, answer = _raw(gateway, method, _filled(path), ONCE, KINDS[0])
        assert "duplicate key" not in str(answer), (method, path, status, answer)
