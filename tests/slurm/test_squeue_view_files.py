"""The `sh` squeue shim's files on the lab: served while the gateway runs, never once it has stopped.

A real gateway on the lab, the shims `frontdesk shim install` writes, held jobs so the answer does not move.
`sh -x` shows which path answered (the socket client's path appears in the trace only when it ran).
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from shim_lab import shim_gateway

pytestmark = pytest.mark.slurm


def _traced(shim: Path, argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sh", "-x", str(shim), *argv], env=env, capture_output=True, text=True)


def test_files_are_served_while_the_gateway_runs_and_never_after_it_stops(slurm_lab: Path, tmp_path: Path) -> None:
    shims = tmp_path / "shims"
    with shim_gateway(slurm_lab, shims) as (gw, env):
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
        views = gw.home / "run" / "squeue-views"
        st = (views / f"{os.getuid()}#{'#'.join(argv)}").stat()
        assert (st.st_uid, st.st_mode & 0o777) == (os.getuid(), 0o600)
    assert not (views / "fresh").exists()
    after = _traced(shims / "squeue", argv, env)
    assert "squeue-socket" in after.stderr  # no file served: the socket client, then the real squeue
    assert after.stdout == f"{job} {name} PENDING\n"
    subprocess.run(["scancel", job], capture_output=True)
