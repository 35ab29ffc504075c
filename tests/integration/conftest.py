"""The real agent binaries (tests/harness/node, pinned; installed by tests/conftest.py's harness_node), as session
fixtures for the tests that run them, each checked to be the pinned version."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest


def _pinned(exe: Path, version: str) -> Path:
    out = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == version, out.stdout + out.stderr
    return exe


@pytest.fixture(scope="session")
def claude_bin(harness_node: Path) -> Path:
    return _pinned(harness_node / "claude", "2.1.332 (Claude Code)")


@pytest.fixture(scope="session")
def codex_bin(harness_node: Path) -> Path:
    return _pinned(harness_node / "codex", "codex-cli 0.171.0")


@pytest.fixture(scope="session")
def gemini_bin(harness_node: Path) -> Path:
    return _pinned(harness_node / "gemini", "0.61.0")
