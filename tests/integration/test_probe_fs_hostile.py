"""Hostile questions to POST /v1/fs/{op} on a real gateway: each is a one-line 4xx or a per-path error, and
the gateway keeps answering (a device that never ends must not hold a worker or fill its memory)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "faults"))
from fault_helpers import raw_request  # noqa: E402


def _ask(gw: Any, op: str, body: bytes) -> tuple[int, dict[str, Any]]:
    status, raw = raw_request(gw.socket, "POST", f"/v1/fs/{op}", body)
    payload: dict[str, Any] = json.loads(raw)
    return status, payload


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 100_000 + b"]" * 100_000,
        b'{"a":' * 5_000 + b"1" + b"}" * 5_000,
        b"\xff\xfe not json",
        b'{"argv": ["."], "cwd": "/tmp", "bogus": 1}',
        b'{"argv": ["."], "cwd": "/tmp", "limit": 0}',
        b'{"argv": ["."], "cwd": "/tmp", "limit": -3}',
        b'{"argv": "notalist"}',
    ],
)
def test_bad_bodies_are_one_line_400s(gateway: Any, body: bytes) -> None:
    status, payload = _ask(gateway, "find", body)
    assert status == 400 and payload["error"] == "bad_input", payload
    assert "\n" not in payload["message"] and len(payload["message"]) < 300
    assert gateway.client.health()["ok"]


@pytest.mark.parametrize("op", ["head", "tail", "wc"])
def test_a_device_that_never_ends_is_a_per_path_error_not_a_hung_worker(gateway: Any, tmp_path: Path, op: str) -> None:
    d = tmp_path / "d"
    d.mkdir()
    (d / "small.txt").write_text("one\ntwo\n")
    os.symlink("/dev/zero", d / "zero")
    body = {"argv": ["zero", "/dev/zero", "small.txt"], "cwd": str(d)}
    status, payload = _ask(gateway, op, json.dumps(body).encode())
    assert status == 200, payload
    assert {e["path"] for e in payload["errors"]} == {"zero", "/dev/zero"}
    assert all("not a regular file" in e["message"] for e in payload["errors"])
    assert {i["path"] for i in payload["items"]} >= {"small.txt"}
    assert gateway.client.health()["ok"]
