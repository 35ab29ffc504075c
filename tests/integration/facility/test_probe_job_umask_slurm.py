"""On Slurm too, a root facility gateway's job keeps its submitter's umask (sbatch --uid runs as root and
would hand the job root's own umask as SLURM_UMASK). The checks are test_probe_job_umask.py's."""

from __future__ import annotations

from typing import Any

import pytest
from test_probe_job_umask import test_the_job_keeps_its_submitters_umask, work  # noqa: F401

pytestmark = pytest.mark.slurm

FACILITY_GATEWAY = 'backend = "slurm"\ntick_seconds = 1.0\nplugins = ["slurm"]\n'


@pytest.fixture(autouse=True)
def _lab(slurm_lab: Any) -> None:
    """The Slurm lab cluster (tests/conftest.py skips where it is not up)."""
