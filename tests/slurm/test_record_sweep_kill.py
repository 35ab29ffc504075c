"""Gateways SIGKILLed in the middle of the sweep of Slurm crash-recovery records never lose a live job's record.

Kill points (frontdesk/faults.py): `records_settled` (the database asked which attempts are settled, nothing
deleted) and `record_removed` (one unit of files deleted). The first gateway dies in a sweep pass while its sbatch
(slow: a wrapper that waits, then runs the real one) has not answered, so the attempt's record is the only trace of
a job Slurm is about to take; the second dies after the first file it deletes, once recovery took the orphan's
answer. The third finds the job, which ran once, and the sweep then deletes every stale record and the job's own.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "faults"))
from fault_helpers import until  # noqa: E402
from slow_sbatch import gateway, slurm_jobs, submit, wrapper_bins  # noqa: E402

pytestmark = pytest.mark.slurm

STALE = 50


def _stale(home: Path) -> list[Path]:
    folder = home / "slurm-ids" / "submitted"
    old = time.time() - 3600
    paths = []
    for i in range(STALE):
        path = folder / f"fd-{9000 + i}.1"  # attempts of jobs this gateway does not have
        path.write_text(f"{100000 + i}\n")
        os.utime(path, (old, old))
        paths.append(path)
    return paths


def test_kills_mid_sweep_lose_no_live_record(slurm_lab: Path, gateway_factory: Any, tmp_path: Path) -> None:
    bins = wrapper_bins(tmp_path, '#!/bin/bash\nsleep 14\nexec /usr/bin/sbatch "$@"\n')  # slurmctld slow
    gw = gateway(gateway_factory, slurm_lab, bins, command_timeout=60, env={"FRONTDESK_FAULT": "records_settled:2"})
    runs = submit(gw, tmp_path)  # the answer waits for sbatch's: the gateway dies first
    record = gw.home / "slurm-ids" / "submitted" / "fd-1.1"
    until(lambda: gw.proc.poll() is not None, timeout=60, what="the gateway to die in its second sweep pass")
    assert gw.proc.returncode == -9 and record.exists()
    stale = _stale(gw.home)
    gw.env["FRONTDESK_FAULT"] = "record_removed:1"
    try:
        gw.start()  # recovery waits for the orphaned sbatch and takes its answer; the first pass then dies
    except RuntimeError:
        pass  # it died in that pass before its first answer
    until(lambda: gw.proc.poll() is not None, timeout=60, what="the gateway to die after one deletion")
    assert gw.proc.returncode == -9
    assert sum(p.exists() for p in stale) == STALE - 1  # one unit deleted, then the kill
    gw.env.pop("FRONTDESK_FAULT")
    gw.start()
    job = gw.wait_state(1, {"COMPLETED", "FAILED", "CANCELLED"}, timeout=120)
    assert job["state"] == "COMPLETED", (job, gw.log()[-3000:])
    assert runs.read_text().splitlines() == ["ran"]
    assert slurm_jobs(gw) == [job["backend_id"]]  # one Slurm job: the attempt was never launched again
    until(lambda: not any(p.exists() for p in [*stale, record]), timeout=60, what="every settled record swept")
