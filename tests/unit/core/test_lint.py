"""The formatting and lint rules are part of the build: `ruff format` is the formatting."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _ruff() -> list[str]:
    exe = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    if not Path(exe).exists():
        pytest.fail("ruff is a dev dependency; install '.[dev]'")
    return [exe]


def test_ruff_format_is_clean() -> None:
    proc = subprocess.run([*_ruff(), "format", "--check", "."], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_check_is_clean() -> None:
    proc = subprocess.run([*_ruff(), "check", "."], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
