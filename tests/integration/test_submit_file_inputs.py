"""`frontdesk submit FILE` on files that are no spec: an endless device, bytes that are not UTF-8, a directory.
Each is one line on stderr and exit 2, read with bounded memory; nothing is stored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


@pytest.mark.parametrize("name", ["/dev/zero", "latin1.yaml", "."])
def test_a_file_that_is_no_spec_is_one_line_and_exit_2(gateway: Any, tmp_path: Path, name: str) -> None:
    (tmp_path / "latin1.yaml").write_bytes(b"command: [echo, caf\xe9]\n")
    before = gateway.client.request("GET", "/v1/jobs")
    r = gateway.cli("submit", name, cwd=tmp_path, timeout=60)
    assert r.returncode == 2, (r.returncode, r.stderr[-500:])
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr[-500:]
    assert gateway.client.request("GET", "/v1/jobs") == before
