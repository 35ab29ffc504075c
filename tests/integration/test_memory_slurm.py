"""The failure memory on the Slurm lab cluster: Slurm's own oom-kill line becomes the lesson's evidence."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slurm

ROOT = Path(__file__).resolve().parents[2]
CMD = [
    sys.executable,
    "-c",
    "import os, time; time.sleep(float(os.environ.get('DELAY', '0'))); x = bytearray(400 * 2**20); time.sleep(1)",
]


@pytest.fixture
def slurm_memory_gateway(gateway_factory: Any) -> Any:
    if os.geteuid() != 0:
        pytest.skip("slurm lab needs root (scripts/slurm-lab up starts slurmctld/slurmd)")
    lab = Path(os.environ.get("FRONTDESK_SLURM_LAB", "/var/lib/frontdesk-slurm-lab"))
    done = subprocess.run([str(ROOT / "scripts" / "slurm-lab"), "up"], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        pytest.fail(f"scripts/slurm-lab up failed:\n{done.stderr[-3000:]}")
    config = (
        '[gateway]\nbackend = "slurm"\ntick_seconds = 1.0\nplugins = ["slurm", "memory"]\n\n'
        "[memory]\nunix_groups = false\n"
    )
    return gateway_factory(config=config, env={"SLURM_CONF": str(lab / "etc" / "slurm.conf")})


def test_slurm_oom_is_remembered_and_the_fix_told(slurm_memory_gateway: Any, workdir: Path) -> None:
    gw = slurm_memory_gateway

    def submit(memory: str, session: str, delay: int = 0) -> dict[str, Any]:
        spec = {
            "command": CMD,
            "workdir": str(workdir),
            "pool": "test",
            "env": {"DELAY": str(delay)},
            "resources": {"memory": memory, "walltime": "2m"},
        }
        return gw.client.submit(spec=spec, context={"session": session, "cwd": str(workdir)})

    first = submit("100M", "s1")
    rep = gw.client.wait([first["id"]], "all", 120)["reports"][0]
    assert rep["state"] == "OUT_OF_MEMORY"
    sig = rep["extra"]["memory"]["signature"]
    assert sig["matcher"] == "slurm-oom-kill"  # read from Slurm's own stderr line
    assert "oom-kill event(s) in StepId=<n>.batch" in sig["normalised_line"]
    second = submit("1G", "s1")
    rep = gw.client.wait([second["id"]], "all", 120)["reports"][0]
    assert rep["state"] == "COMPLETED", rep
    assert rep["extra"]["memory"]["lessons"][0]["fix"]["evidence"] == [first["id"], second["id"]]
    third = submit("100M", "s2", delay=120)
    [note] = [n for n in third["notices"] if n["source"] == "memory" and "lesson_id" in n]
    assert "ended OUT_OF_MEMORY once at 100M" in note["text"] and "completed with memory 1G" in note["text"]
    gw.client.cancel(third["id"])


def test_a_job_that_found_no_gpu_is_told_which_partitions_have_them(slurm_memory_gateway: Any, workdir: Path) -> None:
    gw = slurm_memory_gateway
    spec = {
        "command": ["sh", "-c", "echo 'RuntimeError: No CUDA GPUs are available' >&2; exit 1"],
        "workdir": str(workdir),
        "pool": "hpc",
        "resources": {"walltime": "2m"},
    }
    job = gw.client.submit(spec=spec, context={"session": "s-gpu", "cwd": str(workdir)})
    rep = gw.client.wait([job["id"]], "all", 120)["reports"][0]
    assert rep["state"] == "FAILED" and rep["classification"]["kind"] == "no_gpu", rep["classification"]
    where = rep["extra"]["memory"]["partition"]
    assert where == "partition hpc has no GPU: use --partition training (a100, h100) or --partition test (a100, h100)"
    assert where in rep["classification"]["next_step"] and "--partition training" in rep["text"]
