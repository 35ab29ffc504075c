"""A gateway SIGKILLed right after the real sbatch accepted a job (before the id is stored) finds that job again
on restart and never submits it a second time, also when the user gave sbatch their own --comment (frontdesk's
tag rides along in the comment). The kill is deterministic: the sbatch in the gateway's bin dir runs the real
one, then kills its parent (the gateway) once."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slurm


@pytest.mark.parametrize("comment", [None, "my experiment"], ids=["no-comment", "user-comment"])
def test_the_job_runs_once_after_a_crash_right_after_sbatch(
    slurm_lab: Path, gateway_factory: Any, tmp_path: Path, comment: str | None
) -> None:
    bins = tmp_path / "bin"
    bins.mkdir()
    for name in ("scontrol", "squeue", "sacct", "scancel", "sinfo"):
        (bins / name).symlink_to(f"/usr/bin/{name}")
    once = tmp_path / "kill-once"
    once.write_text("1")
    (bins / "sbatch").write_text(
        f'#!/bin/bash\nout=$(/usr/bin/sbatch "$@"); rc=$?\n'
        f"if [ -f '{once}' ]; then rm -f '{once}'; kill -9 $PPID; sleep 1; fi\n"
        'echo "$out"; exit $rc\n'
    )
    (bins / "sbatch").chmod(0o755)
    config = (
        '[gateway]\nbackend = "slurm"\ntick_seconds = 1.0\nplugins = ["slurm"]\n'
        f'[slurm]\nrefresh_seconds = 1.0\nbin_dir = "{bins}"\n'
    )
    gw = gateway_factory(config=config, env={"SLURM_CONF": str(slurm_lab / "etc" / "slurm.conf")})
    shims = tmp_path / "shims"
    assert gw.cli("shim", "install", str(shims)).returncode == 0
    runs = tmp_path / "runs.txt"
    argv = ["sbatch", "--parsable", "-o", str(tmp_path / "o-%j.txt")]
    argv += [f"--comment={comment}"] if comment else []
    env = {**gw.env, "PATH": f"{shims}:{os.environ['PATH']}"}
    subprocess.run(
        [*argv, "--wrap", f"echo ran >> '{runs}'"], env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert gw.proc is not None
    gw.proc.wait(timeout=30)  # killed by the sbatch stand-in
    gw.start()
    job = gw.wait_state(1, {"COMPLETED", "FAILED", "CANCELLED"}, timeout=90)
    assert job["state"] == "COMPLETED", job
    every = subprocess.run(["scontrol", "-o", "show", "job"], capture_output=True, text=True).stdout
    ours = [line for line in every.splitlines() if f"WorkDir={tmp_path} " in line]
    assert len(ours) == 1, ours  # one Slurm job: nothing was submitted a second time (ended ones stay listed)
    assert runs.read_text().splitlines() == ["ran"], runs.read_text()
    if comment:
        shown = subprocess.run(
            ["scontrol", "-o", "show", "job", str(job["backend_id"])], capture_output=True, text=True
        ).stdout
        assert f"Comment={comment} fd-" in shown, shown  # the user's comment first, then the tag
