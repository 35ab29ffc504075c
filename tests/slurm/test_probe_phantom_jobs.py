"""A plain Slurm job (sbatch, not through frontdesk) named, tagged and placed like a frontdesk attempt changes
nothing in frontdesk: no job appears in its store, none of its views maps the Slurm job to a frontdesk job, and
after a crash mid-submit the stuck attempt is not taken to be that job.

A job's name, its `--comment` (where frontdesk puts its `fd-N.A@<gateway>` tag), its working directory and its
output path are whatever the submitter writes, and every user sees frontdesk's key and tag on their own jobs.
Before, recovery after a crash matched a stuck attempt by those: the submitting user's own plain job named
`fd-1.1` (the uid check stopped only other users) became frontdesk job 1's attempt, which then reported that
held job's state forever and never ran. Now only the job id sbatch itself wrote for the attempt identifies it.
Real Slurm lab; each planted job is held, renamed to a plain name and cancelled at the end.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from frontdesk.errors import FrontdeskError

pytestmark = pytest.mark.slurm


def _config(bins: Path | None = None) -> str:
    bin_dir = f'bin_dir = "{bins}"\n' if bins else ""
    gateway = '[gateway]\nbackend = "slurm"\ntick_seconds = 1.0\nplugins = ["slurm"]\n'
    return f"{gateway}[slurm]\nrefresh_seconds = 1.0\n{bin_dir}"


def _tag(home: Path, key: str) -> str:
    return f"{key}@{hashlib.sha1(str(home).encode()).hexdigest()[:10]}"  # the gateway's own suffix (render)


@pytest.fixture
def plant(tmp_path: Path) -> Iterator[Any]:
    planted: list[str] = []

    def go(*options: str) -> str:
        argv = ["sbatch", "--parsable", "--hold", "--partition=test", f"--chdir={tmp_path}", *options, "--wrap=true"]
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        planted.append(out.stdout.strip().split(";")[0])
        return planted[-1]

    yield go
    for job in planted:
        subprocess.run(["scontrol", "update", f"JobId={job}", "JobName=tp-cleaned", "Comment=x"], capture_output=True)
        subprocess.run(["scancel", job], capture_output=True)


def _state(slurm_id: str) -> str:
    out = subprocess.run(["scontrol", "-o", "show", "job", slurm_id], capture_output=True, text=True).stdout
    return next((w.split("=", 1)[1] for w in out.split() if w.startswith("JobState=")), "?")


def _view(gw: Any) -> dict[str, Any]:
    with httpx.Client(transport=httpx.HTTPTransport(uds=str(gw.socket)), timeout=30) as c:
        answer = c.get("http://frontdesk/v1/slurm/squeue?history=true")
    assert answer.status_code == 200, answer.text[:300]
    view: dict[str, Any] = answer.json()
    return view


def _fresh_view(gw: Any, planted: list[str]) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while True:  # a snapshot taken after the planting: every planted job is in it
        view = _view(gw)
        if {str(j.get("JobId")) for j in view["jobs"]} >= set(planted) or time.monotonic() > deadline:
            return view
        time.sleep(0.2)


def test_plain_jobs_posing_as_frontdesk_attempts_change_nothing(
    slurm_lab: Path, gateway_factory: Any, tmp_path: Path, plant: Any
) -> None:
    gw = gateway_factory(config=_config(), env={"SLURM_CONF": str(slurm_lab / "etc" / "slurm.conf")})
    job = gw.client.submit(spec={"command": ["sleep", "120"], "workdir": str(tmp_path), "resources": {"memory": "50M"}})
    ours = gw.wait_state(job["id"], {"PENDING", "RUNNING"}, timeout=60)
    while ours["backend_id"] is None:
        time.sleep(0.1)
        ours = gw.client.job(job["id"])
    home = gw.home
    planted = [
        plant("--job-name=fd-1.1", f"--comment={_tag(home, 'fd-1.1')}", f"--output={home}/jobs/1/attempt-1/stdout.log"),
        plant("--job-name=fd-7.1", f"--comment={_tag(home, 'fd-7.1')}", f"--output={home}/jobs/7/attempt-1/stdout.log"),
        plant("--job-name=x", f"--comment=mine {_tag(home, 'fd-8.1[]')}", "--array=0-1"),
        plant(f"--job-name=fd-9.1\n{ours['backend_id']}|fd-1.1|COMPLETED|0:0", f"--comment={_tag(home, 'fd-9.1')}"),
    ]
    for restart in (False, True):
        if restart:
            gw.restart()  # recovery runs over every active attempt
        view = _fresh_view(gw, planted)
        assert view["frontdesk"] == {ours["backend_id"]: job["id"]}, view["frontdesk"]
        assert all(h["id"] == job["id"] for h in view["history"])  # (ended ones the controller forgot)
        listed = gw.client.jobs()
        assert [(j["id"], j["backend_id"]) for j in listed] == [(job["id"], ours["backend_id"])]
        assert gw.client.job(job["id"])["state"] in {"PENDING", "RUNNING"}
        for phantom in (7, 8, 9):
            with pytest.raises(FrontdeskError):
                gw.client.job(phantom)
        assert {_state(p) for p in planted} == {"PENDING"}  # none cancelled, released or touched
    gw.client.cancel(job["id"])
    assert gw.wait_state(job["id"], {"CANCELLED"}, timeout=60)["backend_id"] == ours["backend_id"]


def test_a_crash_mid_submit_never_adopts_a_plain_job_named_like_the_attempt(
    slurm_lab: Path, gateway_factory: Any, tmp_path: Path, plant: Any
) -> None:
    """The gateway dies as it starts sbatch (which never runs): the stuck attempt fd-1.1 has no id recorded. The
    submitter's own plain job, named fd-1.1, tagged with the gateway's tag and writing into the attempt's
    folder, is not it: the attempt is launched again and runs once."""
    bins = tmp_path / "bin"
    bins.mkdir()
    for name in ("scontrol", "squeue", "sacct", "scancel", "sinfo"):
        (bins / name).symlink_to(f"/usr/bin/{name}")
    once = tmp_path / "kill-once"
    once.write_text("1")
    (bins / "sbatch").write_text(
        f"#!/bin/bash\nif [ -f '{once}' ]; then rm -f '{once}'; kill -9 $PPID; exit 1; fi\n"
        'exec /usr/bin/sbatch "$@"\n'
    )
    (bins / "sbatch").chmod(0o755)
    gw = gateway_factory(config=_config(bins), env={"SLURM_CONF": str(slurm_lab / "etc" / "slurm.conf")})
    home = gw.home
    decoy = plant("--job-name=fd-1.1", f"--comment={_tag(home, 'fd-1.1')}", f"--output={home}/jobs/1/attempt-1/x.log")
    runs = tmp_path / "runs.txt"
    spec = {
        "command": ["bash", "-c", f"echo ran >> '{runs}'"],
        "workdir": str(tmp_path),
        "resources": {"memory": "50M"},
    }
    try:
        gw.client.request("POST", "/v1/jobs", {"spec": spec, "context": {"env": {"PATH": os.environ["PATH"]}}})
    except FrontdeskError:
        pass  # the gateway died as it handed the job over
    assert gw.proc is not None
    gw.proc.wait(timeout=30)
    assert not once.exists()
    gw.start()
    job = gw.wait_state(1, {"COMPLETED", "FAILED", "CANCELLED"}, timeout=90)
    assert job["state"] == "COMPLETED" and job["backend_id"] != decoy, job  # was: job 1 = the held decoy, forever
    assert runs.read_text().splitlines() == ["ran"]
    assert _state(decoy) == "PENDING"
    assert _view(gw)["frontdesk"].get(decoy) is None
