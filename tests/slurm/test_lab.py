"""scripts/slurm-lab is idempotent and shaped like a small facility."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.slurm

LAB_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "slurm-lab"


def test_up_again_changes_nothing_and_status_answers(slurm_lab: Path) -> None:
    pids = {p.name: p.read_text() for p in (slurm_lab / "run").glob("*.pid")}
    assert subprocess.run([str(LAB_SCRIPT), "up"], capture_output=True, timeout=120).returncode == 0
    assert {p.name: p.read_text() for p in (slurm_lab / "run").glob("*.pid")} == pids
    status = subprocess.run([str(LAB_SCRIPT), "status"], capture_output=True, text=True, timeout=60)
    assert status.returncode == 0
    for partition in ("hpc*", "training", "agent", "test"):
        assert f"\n{partition} up" in status.stdout
    assert "gpu:a100:2" in status.stdout and "gpu:h100:2" in status.stdout


def test_epilog_wrapper_never_fails(slurm_lab: Path) -> None:
    wrapper = slurm_lab / "bin" / "notify"
    done = subprocess.run([str(wrapper)], env={"SLURM_JOB_ID": "999999", "PATH": "/usr/bin:/bin"}, timeout=10)
    assert done.returncode == 0
