"""A root facility gateway never runs a program as root with the submitter's dynamic-loader variables.

The job's environment is the submitter's (sbatch --export=ALL), so LD_PRELOAD, LD_LIBRARY_PATH and the like
must reach the job; a root gateway once ran `sbatch --uid=U` itself, as root, and the loader honours
LD_PRELOAD in a root process that is not setuid (now sbatch runs as the submitter). The canary is a shared
object whose constructor only creates an empty file named after its effective uid, in a directory of its own
(harmless if it runs).
"""

from __future__ import annotations

from typing import Any

import pytest
from facility_helpers import Facility
from loader_canary import assert_only_the_user_ran_it, canary_fixture, submit_and_end  # noqa: F401

pytestmark = pytest.mark.slurm

FACILITY_GATEWAY = 'backend = "slurm"\ntick_seconds = 1.0\nplugins = ["slurm"]\n'


def test_loader_variables_reach_the_slurm_job_but_no_root_process(
    slurm_lab: Any, facility: Facility, canary: Any
) -> None:
    logs = submit_and_end(facility, canary)
    assert_only_the_user_ran_it(canary, logs)
