"""The Slurm lab cluster for tests marked `slurm`: brought up once per session by scripts/slurm-lab."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from frontdesk.config import Settings

ROOT = Path(__file__).resolve().parents[2]
LAB_SCRIPT = ROOT / "scripts" / "slurm-lab"


@pytest.fixture(scope="session")
def slurm_lab() -> Iterator[Path]:
    """A running lab cluster (SLURM_CONF exported); skips with one line where it cannot run."""
    if os.geteuid() != 0:
        pytest.skip("slurm lab needs root (scripts/slurm-lab up starts slurmctld/slurmd)")
    lab = Path(os.environ.get("FRONTDESK_SLURM_LAB", "/var/lib/frontdesk-slurm-lab"))
    done = subprocess.run([str(LAB_SCRIPT), "up"], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        pytest.fail(f"scripts/slurm-lab up failed:\n{done.stderr[-3000:]}")
    os.environ["SLURM_CONF"] = str(lab / "etc" / "slurm.conf")
    os.environ["FRONTDESK_SLURM_LAB"] = str(lab)
    yield lab


@pytest.fixture
def slurm_settings(slurm_lab: Path) -> Iterator[Settings]:
    """Settings for a SlurmBackend under a fresh home whose path has a space in it."""
    home = Path(tempfile.mkdtemp(prefix="fd slurm-", dir="/tmp"))
    yield Settings(
        home=home,
        runtime_dir=home / "run",
        socket=home / "run" / "gateway.sock",
        backend="slurm",
        sections={
            "slurm": {"conf": str(slurm_lab / "etc" / "slurm.conf"), "notify_dir": str(home / "notify")}
        },
    )


@pytest.fixture
def memory_enforced(slurm_lab: Path) -> None:
    """Skip (one line) where the lab could not enforce memory (no writable cgroup v1 memory controller)."""
    if "TaskPlugin=task/cgroup" not in (slurm_lab / "etc" / "slurm.conf").read_text():
        pytest.skip("the lab has no cgroup v1 memory controller here, so no OUT_OF_MEMORY")
