"""The `sh` squeue shim's files on the lab: served while the gateway runs, never once it has stopped.

A real gateway on the lab, the shims `frontdesk shim install` writes, held jobs so the answer does not move.
`sh -x` shows which path answered (the socket client's path appears in the trace only when it ran).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slurm


def _root_conftest() -> Any:
    spec = importlib.util.spec_from_file_location("fd_tests_conftest", Path(__file__).parents[1] / "conftest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _traced(shim: Path, argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sh", "-x", str(shim), *argv], env=env, capture_output=True, text=True)


def test_files_are_served_while_the_gateway_runs_and_never_after_it_stops(slurm_lab: Path, tmp_path: Path) -> None:
    conftest = _root_conftest()
    home = Path(tempfile.mkdtemp(prefix="fd-", dir="/tmp"))
    config = '[gateway]\nbackend = "slurm"\nplugins = ["slurm"]\n\n[slurm]\nrefresh_seconds = 1.0\n'
    gw = conftest.GatewayProc(home, config=config, env={"SLURM_CONF": str(slurm_lab / "etc" / "slurm.conf")}).start()
    job = ""
    try:
        shims = tmp_path / "shims"
        assert gw.cli("shim", "install", str(shims)).returncode == 0
        env = {**gw.env, "PATH": f"{shims}:{os.environ['PATH']}"}
        name = f"views-{time.time_ns()}"
        job = subprocess.run(
            ["sbatch", "--parsable", "--hold", "-J", name, "--wrap", "true"], env=env, capture_output=True, text=True
        ).stdout.strip()
        argv = ["-h", "-n", name, "-o", "%i %j %T"]
        subprocess.run(["squeue", *argv], env=env, capture_output=True, check=True)  # through the socket: registers
        deadline = time.monotonic() + 60
        while "squeue-socket" in (served := _traced(shims / "squeue", argv, env)).stderr:
            assert time.monotonic() < deadline, served.stderr
            time.sleep(0.2)
        assert served.stdout == f"{job} {name} PENDING\n"
        views = home / "run" / "squeue-views"
        st = (views / f"{os.getuid()}#{'#'.join(argv)}").stat()
        assert (st.st_uid, st.st_mode & 0o777) == (os.getuid(), 0o600)
    finally:
        gw.stop()
        conftest._kill_leftovers(home)
    assert not (views / "fresh").exists()
    after = _traced(shims / "squeue", argv, env)
    assert "squeue-socket" in after.stderr  # no file served: the socket client, then the real squeue
    assert after.stdout == f"{job} {name} PENDING\n"
    subprocess.run(["scancel", job], capture_output=True)
