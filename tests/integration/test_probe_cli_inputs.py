"""CLI inputs named on the command line: `memory classify` read its log whole (`/dev/zero` filled memory, a
FIFO nobody writes hung); a `memory search` query over the server's request-head limit got "non-JSON answer
(HTTP 400)". Now: a regular file's tail is read, anything else is one line and exit 2; a query over 8 KiB is
refused before sending, naming its size."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest


def _cli(*argv: str, env: dict[str, str] | None = None, stdin: Any = None) -> subprocess.CompletedProcess[str]:
    def cap() -> None:  # the old reader would fill memory from /dev/zero: fail with MemoryError instead
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    return subprocess.run(
        [sys.executable, "-m", "frontdesk.cli.main", *argv],
        env=env or {**os.environ, "FRONTDESK_NO_AUTOSTART": "1"},
        stdin=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=cap,
    )


@pytest.mark.parametrize("kind", ["fifo", "device", "directory"])
def test_classify_refuses_what_is_no_regular_file(tmp_path: Path, kind: str) -> None:
    path = {"device": Path("/dev/zero"), "directory": tmp_path}.get(kind, tmp_path / "log.fifo")
    if kind == "fifo":
        os.mkfifo(path)
    out = _cli("memory", "classify", "--json", str(path))
    assert out.returncode == 2, out.stderr[-500:]
    assert json.loads(out.stdout)["error"] == "bad_input" and out.stderr.count("\n") == 1, out.stderr


def test_classify_reads_a_files_tail(tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    with open(log, "w") as fh:
        fh.write("noise line\n" * 2_000_000)  # 22 MB before the line that matters
        fh.write("ModuleNotFoundError: No module named 'torchx'\n")
    out = _cli("memory", "classify", "--json", str(log))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["kind"] == "missing_import"


def test_a_search_longer_than_a_request_head_is_one_clear_line(gateway: Any) -> None:
    out = _cli("memory", "search", "--json", "a" * 100_000, env={**gateway.env})
    assert out.returncode == 2, out.stderr
    assert "at most 8192" in json.loads(out.stdout)["message"]


def test_a_spec_over_the_body_cap_gets_the_gateways_answer(gateway: Any, tmp_path: Path) -> None:
    """The gateway answers 413 and closes before reading the whole body: the client's send fails, and the
    answer already sent is read (it was 'the gateway went away before answering', after the socket timeout)."""
    spec = tmp_path / "big.json"
    spec.write_text(json.dumps({"command": ["true"], "env": {"A": "x" * 2_000_000}}))
    out = _cli("submit", "--json", str(spec), env={**gateway.env})
    assert out.returncode != 0
    assert "over the limit" in json.loads(out.stdout)["message"], out.stdout
