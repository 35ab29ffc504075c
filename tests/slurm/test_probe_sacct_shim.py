"""sacct command lines the sacct shim must hand to the real sacct: what sacct itself refuses (a bad -j id, an
unknown -s state or -u user) and field widths it cannot sensibly build (`JobName%99999999999` was a
MemoryError traceback, a 5,000-digit width a ValueError traceback; `-j abc` answered an empty success)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from shim_lab import shim_gateway

pytestmark = pytest.mark.slurm

ROWS = [
    ("id not a number", ["-j", "abc", "-n"]),
    ("unknown state", ["-s", "bogus", "-n"]),
    ("unknown user", ["-u", "nosuchuser-tp2", "-n"]),
    ("huge width", ["-j", "1", "-o", "JobName%99999999999"]),
    ("5000-digit width", ["-j", "1", "-o", "JobName%" + "9" * 5000]),
    ("width zero", ["-j", "1", "-o", "JobName%0"]),
]


@pytest.fixture(scope="module")
def shim_env(slurm_lab: Path, tmp_path_factory: Any) -> Iterator[dict[str, str]]:
    with shim_gateway(slurm_lab, tmp_path_factory.mktemp("sacct") / "shims") as (_, env):
        yield env


@pytest.mark.parametrize(("name", "args"), ROWS, ids=[r[0] for r in ROWS])
def test_the_real_sacct_answers(shim_env: dict[str, str], name: str, args: list[str]) -> None:
    real = subprocess.run(["sacct", *args], capture_output=True, text=True)
    shim = subprocess.run(["sacct", *args], env=shim_env, capture_output=True, text=True)
    assert "Traceback" not in shim.stderr, shim.stderr[-500:]
    assert (shim.returncode, shim.stdout, shim.stderr) == (real.returncode, real.stdout, real.stderr), name
