"""A batch script the sbatch shim reads is outside input: `sbatch /dev/zero` read forever (the real sbatch fails
its malloc), now the shim stops at 16 MiB with one line."""

from __future__ import annotations

import os
import resource
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slurm


def test_an_endless_script_is_one_line(slurm_lab: Path, gateway_factory: Any, tmp_path: Path) -> None:
    config = '[gateway]\nbackend = "slurm"\nplugins = ["slurm"]\n\n[slurm]\nrefresh_seconds = 1.0\n'
    gw = gateway_factory(config=config, env={"SLURM_CONF": str(slurm_lab / "etc" / "slurm.conf")})
    assert gw.cli("shim", "install", str(tmp_path / "shims")).returncode == 0
    env = {**gw.env, "PATH": f"{tmp_path / 'shims'}:{os.environ['PATH']}"}

    def cap() -> None:  # the old shim would fill memory: fail with MemoryError instead
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    out = subprocess.run(
        ["sbatch", "--parsable", "--hold", "/dev/zero"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=cap,
        cwd=tmp_path,
    )
    assert out.returncode == 1 and out.stdout == "", out
    assert out.stderr == "sbatch: error: frontdesk: a batch script over 16 MiB\n"
