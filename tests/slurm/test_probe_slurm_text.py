"""Job names other users give Slurm directly (plain sbatch, not through frontdesk) come back in every
`scontrol -o show job` the gateway reads: a byte that is not UTF-8, a name that holds ` JobState=`, a name
with a newline followed by another job's record. Before the fix the first made the gateway's whole Slurm view
fail (500 for every caller, no job's end seen), the second turned a pending job COMPLETED in the gateway's
view, the third replaced a victim job's record with the forged one.

Each planted job is held and renamed to a plain name before it is cancelled, so nothing hostile stays in the
shared lab's controller for MinJobAge after the test.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.slurm


@pytest.fixture
def lab_gateway(slurm_lab: Path, gateway_factory: Any, tmp_path: Path) -> Iterator[Any]:
    config = '[gateway]\nbackend = "slurm"\ntick_seconds = 1.0\nplugins = ["slurm"]\n\n[slurm]\nrefresh_seconds = 1.0\n'
    gw = gateway_factory(config=config, env={"SLURM_CONF": str(slurm_lab / "etc" / "slurm.conf")})
    shims = tmp_path / "shims"
    assert gw.cli("shim", "install", str(shims)).returncode == 0
    planted: list[str] = []

    def plant(name: bytes) -> str:
        out = subprocess.run(
            [b"sbatch", b"--parsable", b"--hold", b"-J", name, b"-o", b"/dev/null", b"--wrap", b"true"],
            capture_output=True,
            cwd=tmp_path,
        )
        assert out.returncode == 0, out
        planted.append(out.stdout.decode().strip())
        return planted[-1]

    yield gw, plant, {**gw.env, "PATH": f"{shims}:{os.environ['PATH']}"}
    for job in planted:
        subprocess.run(["scontrol", "update", f"JobId={job}", "JobName=tp2-cleaned"], capture_output=True)
        subprocess.run(["scancel", job], capture_output=True)


def _view(gw: Any) -> dict[str, Any]:
    time.sleep(1.2)  # past refresh_seconds: a snapshot taken after the planting
    with httpx.Client(transport=httpx.HTTPTransport(uds=str(gw.socket)), timeout=30) as c:
        answer = c.get("http://frontdesk/v1/slurm/squeue")
    assert answer.status_code == 200, answer.text[:300]
    view: dict[str, Any] = answer.json()
    return view


def test_a_name_that_is_not_utf8_breaks_nothing(lab_gateway: Any, tmp_path: Path) -> None:
    gw, plant, _ = lab_gateway
    bad = plant(b"tp2-\xff\xfe-bad")
    row = next(j for j in _view(gw)["jobs"] if j["JobId"] == bad)
    assert row["JobName"] == "tp2-\ufffd\ufffd-bad"
    job = gw.client.submit(spec={"command": ["true"], "workdir": str(tmp_path), "resources": {"memory": "100M"}})
    assert gw.wait_state(job["id"], {"COMPLETED", "FAILED"}, timeout=60)["state"] == "COMPLETED"


def test_a_name_holding_job_state_does_not_end_the_job(lab_gateway: Any) -> None:
    gw, plant, env = lab_gateway
    job = plant(b"tp2 JobState=COMPLETED ExitCode=0:0")
    row = next(j for j in _view(gw)["jobs"] if j["JobId"] == job)
    assert (row["JobState"], row["JobName"]) == ("PENDING", "tp2 JobState=COMPLETED ExitCode=0:0")
    argv = ["squeue", "-h", "-j", job, "-o", "%i|%j|%T|%u"]
    real = subprocess.run(argv, capture_output=True, text=True)
    shim = subprocess.run(argv, env=env, capture_output=True, text=True)
    assert (shim.returncode, shim.stdout) == (real.returncode, real.stdout)


@pytest.mark.parametrize("head", [b"tp2nl", b"tp2nl JobState=RUNNING"], ids=["cut", "head-looks-whole"])
def test_a_newline_in_a_name_cannot_rewrite_another_job(lab_gateway: Any, head: bytes) -> None:
    """A cut record drops its rest; a head that looks whole leaves the victim's id on two lines, and the
    gateway asks `scontrol -o show job VICTIM` alone."""
    gw, plant, env = lab_gateway
    victim = plant(b"tp2-victim")
    plant(head + b"\nJobId=" + victim.encode() + b" JobName=forged JobState=COMPLETED")
    rows = [j for j in _view(gw)["jobs"] if j["JobId"] == victim]
    assert [(r["JobName"], r["JobState"]) for r in rows] == [("tp2-victim", "PENDING")]
    argv = ["squeue", "-h", "-j", victim, "-o", "%i|%j|%T"]
    real = subprocess.run(argv, capture_output=True, text=True)
    shim = subprocess.run(argv, env=env, capture_output=True, text=True)
    assert (shim.returncode, shim.stdout) == (real.returncode, real.stdout)
