"""A Slurm lab gateway whose sbatch is slow or silent: a wrapper on its bin_dir that runs the real sbatch late, or
runs it and holds the answer back (as when slurmctld's reply is lost). Shared by the restart and sweep-kill tests.
"""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path
from typing import Any

from frontdesk.errors import FrontdeskError

__all__ = ["gateway", "held_answer", "slurm_jobs", "submit", "wrapper_bins"]


def held_answer(taken: Path, hold: Path) -> str:
    """An sbatch that submits for real, touches `taken`, then holds its answer until `hold` (a FIFO) is written
    (a read in bash: no child left behind) or 300 s pass."""
    return (
        f"#!/bin/bash\nout=$(/usr/bin/sbatch \"$@\"); rc=$?\ntouch '{taken}'\n"
        f"exec 3<>'{hold}'; read -r -t 300 -u 3 _\n"
        'echo "$out"; exit $rc\n'
    )


def wrapper_bins(tmp_path: Path, sbatch: str) -> Path:
    bins = tmp_path / "bin"
    bins.mkdir()
    for name in ("scontrol", "squeue", "sacct", "scancel", "sinfo"):
        (bins / name).symlink_to(f"/usr/bin/{name}")
    (bins / "sbatch").write_text(sbatch)
    (bins / "sbatch").chmod(0o755)
    return bins


def gateway(
    gateway_factory: Any, slurm_lab: Path, bins: Path, command_timeout: float, env: dict[str, str] | None = None
) -> Any:
    config = (
        '[gateway]\nbackend = "slurm"\ntick_seconds = 1.0\nplugins = ["slurm"]\n'
        f'[slurm]\nrefresh_seconds = 1.0\nbin_dir = "{bins}"\ncommand_timeout = {command_timeout}\n'
    )
    return gateway_factory(config=config, env={"SLURM_CONF": str(slurm_lab / "etc" / "slurm.conf"), **(env or {})})


def submit(gw: Any, tmp_path: Path) -> Path:
    """Submit from a thread: the answer waits for sbatch's (or fails when the gateway dies first)."""
    runs = tmp_path / "runs.txt"
    spec = {
        "command": ["bash", "-c", f"echo ran >> '{runs}'"],
        "workdir": str(tmp_path),
        "resources": {"memory": "50M"},
    }
    body = {"spec": spec, "context": {"env": {"PATH": os.environ["PATH"]}}}

    def send() -> None:
        try:
            gw.client.request("POST", "/v1/jobs", body)
        except FrontdeskError:
            pass  # the gateway died before sbatch answered

    threading.Thread(target=send, daemon=True).start()
    return runs


def slurm_jobs(gw: Any) -> list[str]:
    """Slurm's jobs of attempt fd-1.1 (sbatch runs in the attempt's folder, its WorkDir; ended ones stay listed)."""
    every = subprocess.run(["scontrol", "-o", "show", "job"], capture_output=True, text=True, timeout=60).stdout
    here = f"WorkDir={gw.home}/jobs/1/attempt-1 "
    return [line.split()[0].split("=")[1] for line in every.splitlines() if here in line]
