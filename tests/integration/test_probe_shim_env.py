"""FRONTDESK_URL is outside input to the shims: a port that is no number (`http://host:abc`), out of range or 0
gave a ValueError traceback from squeue/sacct; now the gateway is "unavailable" with one line naming the URL
(FRONTDESK_SHIM_STRICT: exit 69; otherwise the real command answers)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize("url", ["http://host:abc", "http://host:0", "http://localhost:99999999", "http://:80"])
@pytest.mark.parametrize("command", [["squeue", "-h"], ["sacct", "-n", "-j", "1"]])
def test_a_bad_frontdesk_url_is_one_line(tmp_path: Path, url: str, command: list[str]) -> None:
    env = {**os.environ, "FRONTDESK_HOME": str(tmp_path / "home"), "FRONTDESK_NO_AUTOSTART": "1"}
    installed = subprocess.run(
        [sys.executable, "-m", "frontdesk.cli.main", "shim", "install", str(tmp_path / "shims")],
        env=env,
        capture_output=True,
        text=True,
    )
    assert installed.returncode == 0, installed.stderr
    env.update({"FRONTDESK_URL": url, "FRONTDESK_SHIM_STRICT": "1"})
    out = subprocess.run([str(tmp_path / "shims" / command[0]), *command[1:]], env=env, capture_output=True, text=True)
    assert out.returncode == 69, out.stderr
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr and url in out.stderr, out.stderr
