"""Steps of tests that drive a real gateway (the `gateway_factory` fixture's GatewayProc of tests/conftest.py)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def cli_submit(gw: Any, workdir: Path, spec: dict[str, Any]) -> dict[str, Any]:
    """Submit `spec` through the real CLI (`frontdesk submit job.json --json`, from `workdir`); its answer."""
    path = workdir / "job.json"
    path.write_text(json.dumps(spec))
    r = gw.cli("submit", str(path), "--json", cwd=workdir)
    assert r.returncode == 0, r.stderr
    out: dict[str, Any] = json.loads(r.stdout)
    return out


def session_when(gw: Any, sid: str, ok: Callable[[dict[str, Any]], bool], timeout: float = 60) -> dict[str, Any]:
    """The session record once `ok(record)` holds, or as it is after `timeout` s (reads the API; no hidden sleep)."""
    deadline = time.monotonic() + timeout
    while True:
        s: dict[str, Any] = gw.client.request("GET", f"/v1/sessions/{sid}")
        if ok(s) or time.monotonic() > deadline:
            return s
        time.sleep(0.05)
