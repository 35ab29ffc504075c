"""`frontdesk analyze --sacct run` against the lab's real `sacct`: the lab keeps no accounting (no slurmdbd),
so the real command's refusal must come back as one line and exit 2, never a traceback or an empty table."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from frontdesk.telemetry.sampler import SamplerStats
from frontdesk.telemetry.store import ObserveStore

pytestmark = pytest.mark.slurm


def test_sacct_run_on_a_cluster_without_accounting_is_one_line(slurm_lab: Path, tmp_path: Path) -> None:
    obs = tmp_path / "observe.db"
    store = ObserveStore(obs)
    store.end_run(store.start_run("lab", time.time() - 60, 5.0), time.time(), SamplerStats(), 0.0)
    store.close()
    exe = Path(sys.executable).parent / "frontdesk"
    out = subprocess.run(
        [str(exe), "analyze", str(obs), "--no-journal", "--sacct", "run"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("\n") == 1 and "sacct failed" in out.stderr and "accounting" in out.stderr
