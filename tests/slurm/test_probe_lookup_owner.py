"""After a crash mid-submit, a gateway never takes another user's Slurm job for one of its stuck attempts.

Recovery finds an attempt whose sbatch ran but whose id was not stored by its key: the job name, the tag that
ends `--comment`, or an output path under the gateway's home. All three are whatever a submitter writes, and
every user sees the tag format on their own jobs (`scontrol show job`). Before, a root gateway adopted a job
any user tagged `fd-<id>.<attempt>@<gateway>` as that stuck attempt (its state, its end, its cancel). Now the
gateway names the uid each attempt runs as and the job must be that uid's; and since then no name, tag or path
identifies an attempt at all, only the id sbatch wrote for it (recovery.py, test_probe_phantom_jobs.py).
Real Slurm lab; the forged job is a held `true` submitted by a real second user, cancelled at the end.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from backend_helpers import run, started
from frontdesk.config import Settings
from unix_users import ensure_user

pytestmark = pytest.mark.slurm

FORGER = "fdprobe-forge"


def test_a_job_of_another_user_tagged_like_a_stuck_attempt_is_not_adopted(slurm_settings: Settings) -> None:
    forger = ensure_user(FORGER)

    async def go() -> tuple[dict[str, str], dict[str, str], dict[str, str], str]:
        backend = await started(slurm_settings)
        key = "fd-424242.1"
        tag = f"{key}@{backend._tag_suffix()}"
        out = f"{slurm_settings.home}/jobs/424242/attempt-1/stdout.log"
        sbatch = [
            "runuser", "-u", FORGER, "--", "env", f"SLURM_CONF={os.environ['SLURM_CONF']}",
            "sbatch", "--parsable", "--hold", "--partition=test", f"--job-name={key}", f"--comment={tag}",
            f"--output={out}", "--chdir=/tmp", "--wrap=true",
        ]  # fmt: skip
        forged = subprocess.run(sbatch, capture_output=True, text=True, timeout=60, check=True).stdout.strip()
        try:
            mine = await backend.lookup([key], {key: os.geteuid()})
            theirs = await backend.lookup([key], {key: forger.pw_uid})
            unchecked = await backend.lookup([key])  # a caller that names no owners: as before
        finally:
            subprocess.run(["scancel", forged], capture_output=True, timeout=60)
        return mine, theirs, unchecked, forged.split(";")[0]

    mine, theirs, unchecked, forged = run(go())
    assert mine == {}, mine  # was {key: forged}: a stranger's job taken for the gateway's own attempt
    assert theirs == {} and unchecked == {}  # nor for its own submitter: only the id sbatch wrote identifies
