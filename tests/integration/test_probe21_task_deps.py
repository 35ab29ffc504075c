"""Probe 21: a job may depend on ONE task of an array by its Slurm-style id (`--after 12_3`).

Before: `frontdesk run --after 12_3` answered `depends_on: no job '12_3'` although `logs`, `wait`, `cancel`
and `report` take `12_3`, and sbatch's `--dependency=afterok:12_3` means exactly that task.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def _run(gw: Any, *args: str, cwd: Path) -> dict[str, Any]:
    res = gw.cli("run", "--json", *args, cwd=cwd)
    assert res.returncode == 0, res.stderr
    out: dict[str, Any] = json.loads(res.stdout)
    return out


def test_a_job_waits_on_one_task_of_an_array(gateway_factory: Any, tmp_path: Path) -> None:
    gw = gateway_factory()
    gate = tmp_path / "gate"
    wait_gate = f'while [ ! -e "{gate}" ]; do sleep 0.05; done'
    script = f'[ "$SLURM_ARRAY_TASK_ID" = 0 ] && {wait_gate}; [ "$SLURM_ARRAY_TASK_ID" != 2 ]'
    array = _run(gw, "--array", "0-2", "--", "sh", "-c", script, cwd=tmp_path)["id"]
    after0 = _run(gw, "--after", f"{array}_0", "--", "true", cwd=tmp_path)["id"]
    after2 = _run(gw, "--after", f"{array}_2", "--", "true", cwd=tmp_path)["id"]
    tasks = {t["array_index"]: t for t in gw.client.jobs(array=array, limit=10)}
    gw.wait_state(tasks[1]["id"], {"COMPLETED"})
    gw.wait_state(after2, {"DEPENDENCY_NEVER_SATISFIED"})  # task 2 failed
    assert gw.client.job(after0)["state"] == "PENDING"  # task 0 still runs (its gate is closed)
    gate.touch()
    done = gw.wait_state(after0, {"COMPLETED"})
    assert done["started_at"] >= gw.client.job(tasks[0]["id"])["ended_at"]
    missing = gw.cli("run", "--after", f"{array}_7", "--", "true", cwd=tmp_path)
    assert missing.returncode == 2 and f"no job '{array}_7'" in missing.stderr, missing.stderr
    huge = gw.cli("run", "--after", f"{array}_99999999999999999999", "--", "true", cwd=tmp_path)
    assert huge.returncode == 2 and len(huge.stderr.strip().splitlines()) == 1, huge.stderr
    assert gw.client.health()
