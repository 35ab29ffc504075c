"""Preemption by suspension, live on the embedded backend: a real gateway on a 2-core machine, a batch job holding
both cores, a granted trial arriving. The trial starts at once on the batch job's cores, the batch job is really
frozen (its progress counter stands still while the trial works) and resumes with its whole work done; a cancel
while frozen ends it; a gateway killed with -9 while it is frozen finds it suspended again, and a restart after its
trial ended resumes it. Synchronised on job states, events and files the jobs write: no timed assertion."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from gateway_helpers import cli_submit

PY = sys.executable

CONFIG = """
[local]
cpus = 2
memory = "2G"

[policy.suspend]
enabled = true
"""

BATCH = r"""
import os, sys, time
d, n = sys.argv[1], int(sys.argv[2])
def put(name, value):
    tmp = os.path.join(d, name + ".tmp")
    with open(tmp, "w") as fh:
        fh.write(str(value))
    os.replace(tmp, os.path.join(d, name))
put("batch.pid", os.getpid())
for i in range(1, n + 1):
    put("count", i)
    if i == 10:  # the test arms the trial only now: the work cannot end before the trial arrives
        while not os.path.exists(os.path.join(d, "armed")):
            time.sleep(0.02)
    time.sleep(0.05)
"""

TRIAL = r"""
import os, sys, time
d = sys.argv[1]
n = 0
while not os.path.exists(os.path.join(d, "stop")):
    if os.path.exists(os.path.join(d, f"go-{n + 1}")):
        n += 1
        for i in range(20):
            with open(os.path.join(d, "trial-count"), "w") as fh:
                fh.write(str(i))
            time.sleep(0.05)
        open(os.path.join(d, f"done-{n}"), "w").close()
    time.sleep(0.02)
"""

WORK = 200
"""The batch job's steps (0.05 s each)."""


def _until(what: Any, timeout: float = 60.0) -> Any:
    """A hang guard (never an assertion on time): poll `what` until it is truthy."""
    deadline = time.monotonic() + timeout
    while not (got := what()):
        assert time.monotonic() < deadline, f"{what} never held"
        time.sleep(0.02)
    return got


def _count(d: Path) -> int:
    return int((d / "count").read_text())


def _trial_works(d: Path, phase: int) -> None:
    """The trial does 20 steps of its own work (go-N), and says so (done-N)."""
    (d / f"go-{phase}").touch()
    _until(lambda: (d / f"done-{phase}").exists())


def _states(gw: Any, job_id: int) -> list[tuple[str, str]]:
    """(previous, state) of every job.state event of the job, in the journal's order."""
    evs = gw.client.events(job=job_id)
    return [(e["data"]["previous"], e["data"]["state"]) for e in evs if e["kind"] == "job.state"]


def _running_batch(gw: Any, workdir: Path, d: Path) -> int:
    """A batch job on both cores, RUNNING and 10 steps into its work (held there until `armed`)."""
    batch = cli_submit(
        gw,
        workdir,
        {
            "command": [PY, "-c", BATCH, str(d), str(WORK)],
            "resources": {"cpus": 2, "walltime": "1h", "memory": "256M"},
        },
    )
    assert batch["job_class"] == "hpc"
    gw.wait_state(batch["id"], {"RUNNING"})
    _until(lambda: (d / "count").exists() and _count(d) >= 10)
    return int(batch["id"])


def _frozen_batch(gw: Any, workdir: Path, d: Path, batch: int | None = None) -> tuple[int, int]:
    """A batch job on both cores (`batch` if given), then a trial: (batch id, trial id) once the batch is
    SUSPENDED."""
    if batch is None:
        batch = _running_batch(gw, workdir, d)
    (d / "armed").touch()
    trial = cli_submit(
        gw,
        workdir,
        {
            "command": [PY, "-c", TRIAL, str(d)],
            "trial": True,
            "resources": {"cpus": 1, "walltime": "5m", "memory": "64M"},
        },
    )
    started = gw.wait_state(trial["id"], {"RUNNING", "COMPLETED", "FAILED"})
    assert started["state"] == "RUNNING"
    assert gw.wait_state(batch, {"SUSPENDED", "COMPLETED"})["state"] == "SUSPENDED"
    return batch, trial["id"]


@pytest.fixture
def jobdir(tmp_path: Path) -> Path:
    d = tmp_path / "progress"
    d.mkdir()
    d.chmod(0o777)
    return d


@pytest.mark.parametrize("how", ["freezer", "signals"])
def test_trial_suspends_batch_job_which_resumes_with_its_work_done(
    gateway_factory: Any, workdir: Path, jobdir: Path, how: str
) -> None:
    # the cgroup freezer where the shepherd may make one, else SIGSTOP/SIGCONT (FRONTDESK_NO_CGROUP: no cgroup)
    gw = gateway_factory(config=CONFIG, env={"FRONTDESK_NO_CGROUP": "1"} if how == "signals" else None)
    batch, trial = _frozen_batch(gw, workdir, jobdir)
    pid = int((jobdir / "batch.pid").read_text())
    if how == "freezer":
        (state,) = Path("/sys/fs/cgroup/freezer/frontdesk").glob(f"*-{batch}.1/freezer.state")
        assert state.read_text().strip() == "FROZEN"
    else:
        assert Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"  # stopped
    before = _count(jobdir)
    _trial_works(jobdir, 1)  # 20 steps of the trial on the batch job's cores
    assert _count(jobdir) == before, "the batch job advanced while suspended"
    assert before < WORK
    (jobdir / "stop").touch()
    assert gw.wait_state(trial, {"COMPLETED", "FAILED"}, timeout=60)["state"] == "COMPLETED"
    done = gw.wait_state(batch, {"COMPLETED", "FAILED", "TIMEOUT", "CANCELLED"}, timeout=120)
    assert done["state"] == "COMPLETED"
    assert _count(jobdir) == WORK  # its whole work, none lost, none repeated
    states = _states(gw, batch)
    assert ("RUNNING", "SUSPENDED") in states and ("SUSPENDED", "RUNNING") in states
    assert states.index(("RUNNING", "SUSPENDED")) < states.index(("SUSPENDED", "RUNNING"))
    report = gw.client.report(batch)
    assert report["suspended_s"] > 0 and report["run_s"] > report["suspended_s"]
    assert "suspended for trials" in report["text"]
    assert "suspended_s" not in gw.client.report(trial)  # the trial was never suspended


def test_switching_suspension_on_by_a_policy_reload_covers_a_job_already_running(
    gateway_factory: Any, workdir: Path, jobdir: Path
) -> None:
    """The batch job starts while suspension is off; `frontdesk policy reload` switches it on; the next trial
    freezes that job all the same (every job may be frozen: one started while suspension was off by signals, no
    freezer cgroup made at its start), and the job ends with its whole work."""
    off = CONFIG.replace("enabled = true", "enabled = false")
    gw = gateway_factory(config=off)
    batch = _running_batch(gw, workdir, jobdir)
    (gw.home / "frontdesk.toml").write_text(CONFIG)
    r = gw.cli("policy", "reload", "--json")
    assert r.returncode == 0, r.stderr
    show = json.loads(gw.cli("policy", "show", "--json").stdout)
    assert show["version"] == 2 and show["config"]["suspend"]["enabled"] is True
    batch, trial = _frozen_batch(gw, workdir, jobdir, batch)
    pid = int((jobdir / "batch.pid").read_text())
    assert Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"  # stopped
    assert not list(Path("/sys/fs/cgroup/freezer/frontdesk").glob(f"*-{batch}.1"))
    before = _count(jobdir)
    _trial_works(jobdir, 1)
    assert _count(jobdir) == before < WORK, "the batch job advanced while suspended"
    (jobdir / "stop").touch()
    assert gw.wait_state(trial, {"COMPLETED", "FAILED"}, timeout=60)["state"] == "COMPLETED"
    done = gw.wait_state(batch, {"COMPLETED", "FAILED", "TIMEOUT", "CANCELLED"}, timeout=120)
    assert done["state"] == "COMPLETED"
    assert _count(jobdir) == WORK
    assert ("SUSPENDED", "RUNNING") in _states(gw, batch)


def test_a_second_trial_joins_the_suspension_and_the_job_resumes_after_the_last_one(
    gateway_factory: Any, workdir: Path, jobdir: Path, tmp_path: Path
) -> None:
    gw = gateway_factory(config=CONFIG)
    batch, first = _frozen_batch(gw, workdir, jobdir)
    other = tmp_path / "second"
    other.mkdir()
    other.chmod(0o777)
    limits = {"cpus": 1, "walltime": "4m", "memory": "64M"}  # ends within the first trial's 5 min: it joins
    second = cli_submit(gw, workdir, {"command": [PY, "-c", TRIAL, str(other)], "trial": True, "resources": limits})[
        "id"
    ]
    assert gw.wait_state(second, {"RUNNING", "COMPLETED", "FAILED"})["state"] == "RUNNING"  # the idle lent core
    (jobdir / "stop").touch()
    assert gw.wait_state(first, {"COMPLETED", "FAILED"}, timeout=60)["state"] == "COMPLETED"
    before = _count(jobdir)
    _trial_works(other, 1)  # the second trial still runs on the job's cores: the job stays frozen
    assert _count(jobdir) == before and gw.client.job(batch)["state"] == "SUSPENDED"
    (other / "stop").touch()
    assert gw.wait_state(second, {"COMPLETED", "FAILED"}, timeout=60)["state"] == "COMPLETED"
    assert gw.wait_state(batch, {"COMPLETED", "FAILED", "TIMEOUT"}, timeout=120)["state"] == "COMPLETED"
    assert _count(jobdir) == WORK
    assert _states(gw, batch).count(("RUNNING", "SUSPENDED")) == 1  # one suspension for both trials


def test_cancel_while_frozen_kills_the_job_and_frees_its_cores(
    gateway_factory: Any, workdir: Path, jobdir: Path
) -> None:
    gw = gateway_factory(config=CONFIG)
    batch, trial = _frozen_batch(gw, workdir, jobdir)
    pid = int((jobdir / "batch.pid").read_text())
    gw.client.cancel(batch)
    assert gw.wait_state(batch, {"CANCELLED", "COMPLETED", "FAILED"}, timeout=60)["state"] == "CANCELLED"
    _until(lambda: not os.path.exists(f"/proc/{pid}"))  # thawed, then killed: gone, not frozen forever
    assert _count(jobdir) < WORK
    (jobdir / "stop").touch()
    assert gw.wait_state(trial, {"COMPLETED", "FAILED"}, timeout=60)["state"] == "COMPLETED"
    # the group's cores are free again once its trial ended: a 2-core job starts
    after = gw.cli("run", "--cpus", "2", "--mem", "64M", "--time", "1m", "--json", "--", "true", cwd=workdir)
    assert after.returncode == 0, after.stderr
    assert gw.wait_state(json.loads(after.stdout)["id"], {"COMPLETED", "FAILED"}, timeout=60)["state"] == "COMPLETED"
    state_id = (gw.home / "local" / "state-id").read_text().strip()
    assert not list(Path("/sys/fs/cgroup/freezer/frontdesk").glob(f"{state_id}-*"))  # every job's freezer removed


def test_gateway_killed_while_frozen_keeps_the_job_suspended_then_resumes_it(
    gateway_factory: Any, workdir: Path, jobdir: Path
) -> None:
    gw = gateway_factory(config=CONFIG)
    batch, trial = _frozen_batch(gw, workdir, jobdir)
    gw.kill9()
    gw.start()  # its trial still runs: the job stays suspended, its cores stay lent (accounted)
    before = _count(jobdir)
    _trial_works(jobdir, 1)
    assert _count(jobdir) == before
    assert gw.client.job(batch)["state"] == "SUSPENDED"
    queued = gw.cli("run", "--cpus", "1", "--mem", "64M", "--time", "1m", "--json", "--", "true", cwd=workdir)
    blocked = json.loads(queued.stdout)["id"]
    _trial_works(jobdir, 2)  # nothing starts on the lent cores but trials: the plain job waits
    assert gw.client.job(blocked)["state"] == "PENDING"
    gw.kill9()
    (jobdir / "stop").touch()  # the trial ends while no gateway runs
    _until(lambda: any((gw.home / "local").glob(f"{trial}.*/result.json")))
    gw.start()  # its trial is over: the job is thawed, never left frozen
    done = gw.wait_state(batch, {"COMPLETED", "FAILED", "TIMEOUT", "CANCELLED"}, timeout=120)
    assert done["state"] == "COMPLETED"
    assert _count(jobdir) == WORK
    assert gw.wait_state(blocked, {"COMPLETED", "FAILED"}, timeout=60)["state"] == "COMPLETED"
    assert gw.client.report(batch)["suspended_s"] > 0


def test_a_shepherd_left_alone_thaws_its_job_at_the_end_of_the_request_and_the_walltime_skips_the_pause(
    tmp_path: Path, jobdir: Path
) -> None:
    """No gateway at all: the request's end passes, the shepherd thaws the job on its own (never frozen forever),
    and a job frozen longer than its time limit still completes: frozen time is not run time."""
    import subprocess

    adir = tmp_path / "attempt"
    adir.mkdir()
    (jobdir / "armed").touch()
    steps, walltime, frozen_for = 40, 4, 6.0  # 2 s of work; frozen 6 s: 8 s in all, twice the limit
    launch = {
        "backend_id": "manual",
        "argv": [PY, "-c", BATCH, str(jobdir), str(steps)],
        "cwd": str(tmp_path),
        "env": {"PATH": "/usr/bin:/bin"},
        "stdout": str(tmp_path / "o"),
        "stderr": str(tmp_path / "e"),
        "memory_bytes": None,
        "walltime_seconds": walltime,
        "cgroup": f"t15test-{os.getpid()}",
        "suspendable": True,
    }
    (adir / "launch.json").write_text(json.dumps(launch))
    (adir / "suspend").write_text(json.dumps({"until": time.time() + frozen_for, "for": "none"}))  # frozen at once
    shepherd = [PY, "-m", "frontdesk.backends.shepherd", str(adir)]
    subprocess.run(shepherd, check=True, timeout=120)
    result = json.loads((adir / "result.json").read_text())
    assert result["state"] == "COMPLETED", result
    assert result["suspensions"] == 1 and result["suspended_s"] > 0
    assert _count(jobdir) == steps
    account = json.loads((adir / "suspended.json").read_text())
    assert account["frozen"] is False and account["resumed_at"] is not None
    assert (adir / "suspend").exists()  # nobody withdrew the request: the shepherd's own bound thawed it
