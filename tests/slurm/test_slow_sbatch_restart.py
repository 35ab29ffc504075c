"""An sbatch that outlives its gateway never makes a job run twice (Slurm lab, real sbatch, real gateways).

slurmctld slow to answer: the gateway's sbatch is a wrapper on its bin_dir that waits, then runs the real sbatch
(or runs it and holds the answer back, as when the reply is lost). Before, a gateway restarted meanwhile found
no id recorded for the attempt, took it for never handed over and launched it again: the job ran twice. Now
the launch record names the sbatch process (pid and start time, written before it runs): the restarted gateway
waits for it and takes the id it writes; an sbatch that never answers is killed after `command_timeout`, and the
job is found in the controller by the launch's tag (a nonce in --comment) and the attempt's uid.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from frontdesk.errors import FrontdeskError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "faults"))
from fault_helpers import alive, until  # noqa: E402
from slow_sbatch import gateway, held_answer, slurm_jobs, submit, wrapper_bins  # noqa: E402

pytestmark = pytest.mark.slurm


def _launch(gw: Any) -> dict[str, Any]:
    path = gw.home / "slurm-ids" / "launches" / "fd-1.1"
    until(lambda: path.exists() and json.loads(path.read_text()).get("pid") is not None, what="sbatch's pid recorded")
    launch: dict[str, Any] = json.loads(path.read_text())
    until(lambda: _past_gate(launch["pid"]), what="sbatch to pass the gate")  # a kill before: it never runs
    return launch


def _past_gate(pid: int) -> bool:
    try:
        return b"read -r go" not in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True


def _ran_once(gw: Any, tmp_path: Path, runs: Path) -> dict[str, Any]:
    job: dict[str, Any] = gw.wait_state(1, {"COMPLETED", "FAILED", "CANCELLED"}, timeout=120)
    assert job["state"] == "COMPLETED", (job, gw.log()[-3000:])
    assert runs.read_text().splitlines() == ["ran"]
    assert slurm_jobs(gw) == [job["backend_id"]]  # one Slurm job: nothing submitted a second time
    return job


def test_a_restart_while_sbatch_still_runs_waits_for_its_answer(
    slurm_lab: Path, gateway_factory: Any, tmp_path: Path
) -> None:
    bins = wrapper_bins(tmp_path, '#!/bin/bash\nsleep 6\nexec /usr/bin/sbatch "$@"\n')  # the real sbatch, late
    gw = gateway(gateway_factory, slurm_lab, bins, command_timeout=60)
    runs = submit(gw, tmp_path)
    launch = _launch(gw)
    gw.kill9()  # the gateway dies; its sbatch runs on (it is in the gateway's session, not killed with it)
    assert alive(launch["pid"])
    gw.start()
    job = _ran_once(gw, tmp_path, runs)
    assert not alive(launch["pid"])
    shown = subprocess.run(["scontrol", "-o", "show", "job", job["backend_id"]], capture_output=True, text=True)
    assert launch["tag"] in shown.stdout  # the orphan's job, its comment ending with this launch's tag
    records = [gw.home / "slurm-ids" / d / "fd-1.1" for d in ("submitted", "launches")]
    until(lambda: not any(p.exists() for p in records), timeout=60, what="the settled attempt's records swept")


@pytest.mark.parametrize("restart", [False, True], ids=["live-timeout", "restart"])
def test_an_sbatch_that_never_answers_is_found_by_its_tag(
    slurm_lab: Path, gateway_factory: Any, tmp_path: Path, restart: bool
) -> None:
    """The real sbatch submits, then its answer is held back (a FIFO read in bash: no child left behind). The
    gateway that waited `command_timeout` (live), or the restarted one after waiting as long, kills it and finds
    the job Slurm took by the launch's tag and uid, instead of submitting again."""
    taken, hold = tmp_path / "taken", tmp_path / "hold"
    os.mkfifo(hold)
    bins = wrapper_bins(tmp_path, held_answer(taken, hold))
    # live: the real sbatch inside the wrapper must have submitted by the timeout, on a loaded machine too (4 s
    # failed once in CI: the job was never taken, the attempt FAILED)
    gw = gateway(gateway_factory, slurm_lab, bins, command_timeout=30 if not restart else 8)
    runs = submit(gw, tmp_path)
    launch = _launch(gw)
    if restart:
        until(taken.exists, what="Slurm to take the job")
        gw.kill9()
        assert alive(launch["pid"])
        gw.start()
    job = _ran_once(gw, tmp_path, runs)
    assert not alive(launch["pid"])  # killed: it ran longer than the gateway lets sbatch run
    shown = subprocess.run(["scontrol", "-o", "show", "job", job["backend_id"]], capture_output=True, text=True)
    assert launch["tag"] in shown.stdout  # the job found is the one carrying this launch's tag


def test_an_array_whose_sbatch_never_answered_runs_each_task_once(
    slurm_lab: Path, gateway_factory: Any, tmp_path: Path
) -> None:
    """The same for one `sbatch --array`: the restarted gateway kills the silent sbatch, finds the array by its
    launch's tag (the first task's key) and every task by its index; nothing is submitted again."""
    taken, hold = tmp_path / "taken", tmp_path / "hold"
    os.mkfifo(hold)
    bins = wrapper_bins(tmp_path, held_answer(taken, hold))
    gw = gateway(gateway_factory, slurm_lab, bins, command_timeout=8)
    runs = tmp_path / "runs"
    spec = {"command": ["sh", "-c", f"echo $FRONTDESK_ARRAY_TASK_ID >> '{runs}'"], "array": "0-2"}
    body = {"spec": {**spec, "workdir": str(tmp_path)}, "context": {"env": {"PATH": os.environ["PATH"]}}}

    def send() -> None:
        try:
            gw.client.request("POST", "/v1/jobs", body)
        except FrontdeskError:
            pass

    threading.Thread(target=send, daemon=True).start()
    until(taken.exists, timeout=60, what="Slurm to take the array")
    gw.kill9()
    gw.start()
    parent = 1
    tasks = sorted(t["id"] for t in gw.client.request("GET", f"/v1/jobs?array={parent}"))
    res = gw.client.wait([parent, *tasks], "all", 120)
    assert res["done"], (res["pending"], gw.log()[-3000:])
    assert [gw.client.job(t)["state"] for t in tasks] == ["COMPLETED"] * 3
    assert sorted(runs.read_text().split()) == ["0", "1", "2"]  # each task once
    ids = {gw.client.job(t)["backend_id"].split("_")[0] for t in tasks}
    every = subprocess.run(["scontrol", "-o", "show", "job"], capture_output=True, text=True, timeout=60).stdout
    ours = {w.split("=")[1] for line in every.splitlines() if f"WorkDir={gw.home}/" in line for w in line.split()
            if w.startswith("ArrayJobId=")}  # fmt: skip
    assert len(ids) == 1 and ours == ids, (ids, ours)  # one sbatch --array: nothing handed over twice
