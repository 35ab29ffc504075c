"""The agent binaries pinned in tests/harness/node/package.json (`npm ci` installs them there).

`pinned(name, version, package)` is the binary, installed when missing (the test is skipped where npm is not),
and checked to print `version` for `--version`. tests/integration/conftest.py makes session fixtures of them.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

__all__ = ["NODE", "pinned"]

NODE = Path(__file__).resolve().parent / "node"


def pinned(name: str, version: str, package: str) -> Path:
    """The pinned binary `name` of npm `package`, whose `--version` prints `version`."""
    exe = NODE / "node_modules" / ".bin" / name
    if not exe.exists():
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip(f"npm is not installed: cannot install {package}")
        subprocess.run(
            [npm, "ci", "--prefix", str(NODE), "--no-audit", "--no-fund"], check=True, capture_output=True, timeout=600
        )
    out = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == version, out.stdout + out.stderr
    return exe
