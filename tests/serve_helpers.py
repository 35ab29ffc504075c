"""`frontdesk serve` as a real process that must refuse to start (shared by the config and settings tests)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest


def serve_env(home: Path, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment for a gateway on `home` (no autostart, no inherited socket), `env` over it."""
    full = {**os.environ, "FRONTDESK_HOME": str(home), "FRONTDESK_NO_AUTOSTART": "1", **(env or {})}
    full.pop("FRONTDESK_SOCKET", None)
    return full


def serve_refused(
    home: Path, config: str | None = None, env: Mapping[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run `frontdesk serve` on `home` (first writing `config` to its frontdesk.toml, mode 0600, when given) and
    return its exit status and output; the test fails if it still runs after `timeout` seconds (it started)."""
    if config is not None:
        (home / "frontdesk.toml").write_text(config)
        (home / "frontdesk.toml").chmod(0o600)
    cmd = [sys.executable, "-m", "frontdesk.cli.main", "serve"]
    try:
        return subprocess.run(cmd, env=serve_env(home, env), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail("the gateway started with this setting")
