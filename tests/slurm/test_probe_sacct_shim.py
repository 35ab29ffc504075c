"""sacct command lines the sacct shim must hand to the real sacct: what sacct itself refuses (a bad -j id, an
unknown -s state or -u user) and field widths it cannot sensibly build (`JobName%99999999999` was a
MemoryError traceback, a 5,000-digit width a ValueError traceback; `-j abc` answered an empty success)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

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
    import importlib.util

    spec = importlib.util.spec_from_file_location("fd_tests_conftest", Path(__file__).parents[1] / "conftest.py")
    assert spec is not None and spec.loader is not None
    root_conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(root_conftest)
    home = Path(__import__("tempfile").mkdtemp(prefix="fd-", dir="/tmp"))
    config = '[gateway]\nbackend = "slurm"\nplugins = ["slurm"]\n\n[slurm]\nrefresh_seconds = 1.0\n'
    gw = root_conftest.GatewayProc(home, config=config, env={"SLURM_CONF": os.environ["SLURM_CONF"]}).start()
    shims = tmp_path_factory.mktemp("sacct") / "shims"
    assert gw.cli("shim", "install", str(shims)).returncode == 0
    yield {**gw.env, "PATH": f"{shims}:{os.environ['PATH']}"}
    gw.stop()


@pytest.mark.parametrize(("name", "args"), ROWS, ids=[r[0] for r in ROWS])
def test_the_real_sacct_answers(shim_env: dict[str, str], name: str, args: list[str]) -> None:
    real = subprocess.run(["sacct", *args], capture_output=True, text=True)
    shim = subprocess.run(["sacct", *args], env=shim_env, capture_output=True, text=True)
    assert "Traceback" not in shim.stderr, shim.stderr[-500:]
    assert (shim.returncode, shim.stdout, shim.stderr) == (real.returncode, real.stdout, real.stderr), name
