"""A root facility gateway never OPENS a path a user named as a job's output before checking it: opening is
itself an action (a watchdog device arms on open, a tape rewinds, a FIFO's blocked writer is let go), so
`sbatch -o /dev/watchdog` must not make root open the device when it builds the report or reads the logs.

The canary is a FIFO only root may open (0600 in a 0700 root directory) with a root writer blocked in
`open(O_WRONLY)`: that open returns only if some process opens the FIFO for reading. The job runs on the
Slurm lab as a fresh test user (its output path is what `scontrol` reports, so the user picks it); the
report and the logs are asked for as that user. Before the fix the gateway's open released the writer.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from facility_helpers import Facility

from fifo_helpers import BlockedWriter
from unix_users import ensure_user, scratch_dir

pytestmark = pytest.mark.slurm

FACILITY_GATEWAY = 'backend = "slurm"\ntick_seconds = 1.0\nplugins = ["slurm"]\n'
USER = "fdprobe-fifo"


@pytest.fixture(scope="module")
def lab_facility(slurm_lab: Any, facility: Facility) -> Facility:
    ensure_user(USER)
    return facility


@pytest.fixture
def root_fifo() -> Iterator[tuple[Path, BlockedWriter]]:
    with scratch_dir("fdprobe-fifo-", 0o700) as d:
        fifo = d / "device-like"
        os.mkfifo(fifo, 0o600)
        writer = BlockedWriter(fifo)
        yield fifo, writer
        writer.stop()


def test_a_special_file_named_as_output_is_never_opened_as_root(
    lab_facility: Facility, root_fifo: tuple[Path, BlockedWriter]
) -> None:
    fifo, writer = root_fifo
    tag = secrets.token_hex(4)
    spec = {
        "script": "#!/bin/sh\necho from-the-job\n",
        "slurm": {"output": str(fifo), "error": str(fifo), "job_name": f"fdprobe-fifo-{tag}"},
    }
    body = {"spec": spec, "context": {"cwd": "/tmp"}}
    status, rec = lab_facility.probe(USER, [{"method": "POST", "path": "/v1/jobs", "body": body}])[0]
    assert status == 200, rec
    lab_facility.ended(rec["id"], timeout=90)  # the report is built: the gateway read the output's tail by now
    got = lab_facility.probe(
        USER,
        [
            {"method": "GET", "path": f"/v1/jobs/{rec['id']}/report"},
            {"method": "GET", "path": f"/v1/jobs/{rec['id']}/logs?tail=5"},
            {"method": "GET", "path": f"/v1/jobs/{rec['id']}/logs?tail=5&stream=stderr"},
        ],
    )
    assert [g[0] for g in got] == [200, 200, 200], got
    assert got[1][1]["lines"] == [] and got[2][1]["lines"] == [], got
    assert not writer.released.wait(0.5), "the root gateway opened a FIFO the job's user named as its output"
    assert lab_facility.root_client().health()["ok"]
