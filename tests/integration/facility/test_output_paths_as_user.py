"""A root facility gateway reads a job's output files only as its user could: never a file the user names as
`-o` that only root may read (a canary, never a real secret), never through the user's symlink, never a FIFO.

The user is a fresh test user (`fdprobe-out`, made in a fixture); the canary is a root-owned 0600 file in a
0700 root directory holding a random marker. The job runs on the Slurm lab (its output path is what
`scontrol` reports, so the user picks it); report and logs are asked for as that user.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from facility_helpers import Facility, run_as

from unix_users import ensure_user, scratch_dir

pytestmark = pytest.mark.slurm

FACILITY_GATEWAY = 'backend = "slurm"\ntick_seconds = 1.0\nplugins = ["slurm"]\n'
USER = "fdprobe-out"
GATEWAY_CANARY = "fdprobe-gateway-only-" + secrets.token_hex(6)
os.environ["FDPROBE_GATEWAY_ONLY"] = GATEWAY_CANARY  # in the facility gateway's environment, never in a job's


@pytest.fixture(scope="module")
def lab_facility(slurm_lab: Any, facility: Facility) -> Facility:
    ensure_user(USER)
    return facility


@pytest.fixture
def canary() -> Iterator[tuple[Path, str]]:
    """A root-only file (0600 in a 0700 directory) holding a random marker."""
    with scratch_dir("fdprobe-root-", 0o700) as d:
        marker = "fdprobe-canary-" + secrets.token_hex(8)
        f = d / "secret"
        f.write_text(f"{marker}\n")
        f.chmod(0o600)
        yield f, marker


def _as_user(fac: Facility, calls: list[dict[str, Any]]) -> list[Any]:
    return fac.probe(USER, calls)


def _submit_with_output(fac: Facility, output: str, cwd: str) -> int:
    spec = {"script": "#!/bin/sh\necho from-the-job\n", "slurm": {"output": output, "job_name": "fdprobe-out"}}
    status, rec = _as_user(
        fac, [{"method": "POST", "path": "/v1/jobs", "body": {"spec": spec, "context": {"cwd": cwd}}}]
    )[0]
    assert status == 200, rec
    job_id: int = rec["id"]
    return job_id


def _everything_the_user_reads(fac: Facility, job_id: int) -> str:
    fac.ended(job_id, timeout=90)
    got = _as_user(
        fac,
        [
            {"method": "GET", "path": f"/v1/jobs/{job_id}/report"},
            {"method": "GET", "path": f"/v1/jobs/{job_id}/logs?tail=50"},
            {"method": "GET", "path": f"/v1/jobs/{job_id}/logs?tail=50&stream=stderr"},
        ],
    )
    return json.dumps(got)


def test_a_root_only_file_named_as_output_is_never_read_for_the_user(
    lab_facility: Facility, canary: tuple[Path, str]
) -> None:
    path, marker = canary
    job_id = _submit_with_output(lab_facility, str(path), "/tmp")
    seen = _everything_the_user_reads(lab_facility, job_id)
    assert marker not in seen
    assert lab_facility.root_client().health()["ok"]


def test_a_symlink_the_user_planted_is_not_followed_as_root(lab_facility: Facility, canary: tuple[Path, str]) -> None:
    path, marker = canary
    home = Path(os.path.expanduser(f"~{USER}"))
    link = home / f"fdprobe-link-{secrets.token_hex(4)}"
    r = run_as(USER, ["ln", "-s", str(path), str(link)])
    assert r.returncode == 0, r.stderr
    try:
        job_id = _submit_with_output(lab_facility, str(link), str(home))
        seen = _everything_the_user_reads(lab_facility, job_id)
        assert marker not in seen
    finally:
        link.unlink(missing_ok=True)


def test_a_users_slurm_job_gets_their_environment_not_the_root_gateways(lab_facility: Facility) -> None:
    home = os.path.expanduser(f"~{USER}")
    body = {
        "spec": {"command": ["env"]},
        "context": {"cwd": home, "env": {"FDPROBE_MINE": "from-the-user", "HOME": home, "USER": USER}},
    }
    status, rec = _as_user(lab_facility, [{"method": "POST", "path": "/v1/jobs", "body": body}])[0]
    assert status == 200, rec
    lab_facility.ended(rec["id"], timeout=90)
    status, logs = _as_user(lab_facility, [{"method": "GET", "path": f"/v1/jobs/{rec['id']}/logs?tail=500"}])[0]
    assert status == 200, logs
    lines = logs["lines"]
    assert "FDPROBE_MINE=from-the-user" in lines and f"HOME={home}" in lines, lines
    assert not any(GATEWAY_CANARY in line for line in lines), lines
