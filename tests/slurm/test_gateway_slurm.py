"""A real gateway on the Slurm lab: push completion, restart mid-campaign, and the polling shield."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from frontdesk.backends.slurm.parse import parse_scontrol_jobs

pytestmark = pytest.mark.slurm


@pytest.fixture
def slurm_gateway(slurm_lab: Path, gateway_factory: Any, tmp_path: Path) -> Callable[..., Any]:
    """Start real gateways on the slurm backend: `slurm_gateway(tick=1.0)`."""

    def make(tick: float = 1.0, refresh: float = 2.0) -> Any:
        # only the Slurm plug-in: these tests are about the backend and the shield, not the other admissions
        config = (
            f'[gateway]\nbackend = "slurm"\ntick_seconds = {tick}\nplugins = ["slurm"]\n\n'
            f"[slurm]\nrefresh_seconds = {refresh}\n"
        )
        return gateway_factory(config=config, env={"SLURM_CONF": str(slurm_lab / "etc" / "slurm.conf")})

    return make


def _controller_jobs() -> list[dict[str, str]]:
    out = subprocess.run(["scontrol", "-o", "show", "job"], capture_output=True, text=True, check=True).stdout
    return parse_scontrol_jobs(out)


def test_push_reaches_the_gateway_long_before_the_tick(slurm_gateway: Any, workdir: Path) -> None:
    gw = slurm_gateway(tick=120.0)
    job = gw.client.submit(
        spec={
            "command": ["sh", "-c", "echo pushed; sleep 1"],
            "workdir": str(workdir),
            "resources": {"memory": "200M"},
        }
    )
    assert job["backend_id"], job
    done = gw.wait_state(job["id"], {"COMPLETED", "FAILED"}, timeout=30)  # the tick is 120 s away
    assert done["state"] == "COMPLETED"
    report = gw.client.report(job["id"])
    assert report["stdout_tail"] == ["pushed"]
    assert report["used"]["cpu_seconds"] is not None


def test_oom_state_reaches_the_report(slurm_gateway: Any, memory_enforced: None) -> None:
    gw = slurm_gateway(tick=1.0)
    code = "import time; x = bytearray(500 * 2**20); time.sleep(2)"
    job = gw.client.submit(spec={"command": [sys.executable, "-c", code], "resources": {"memory": "100M"}})
    done = gw.wait_state(job["id"], {"OUT_OF_MEMORY", "COMPLETED", "FAILED"}, timeout=60)
    assert done["state"] == "OUT_OF_MEMORY"
    assert gw.client.report(job["id"])["state"] == "OUT_OF_MEMORY"


def test_restart_mid_campaign_neither_loses_nor_resubmits(slurm_gateway: Any) -> None:
    gw = slurm_gateway(tick=1.0)
    ids = [gw.client.submit(spec={"command": ["sleep", "3"], "name": f"camp{i}"})["id"] for i in range(4)]
    before = {i: gw.client.job(i)["backend_id"] for i in ids}
    gw.kill9()
    time.sleep(5)  # every job ends while no gateway runs
    gw.start()
    for i in ids:
        assert gw.wait_state(i, {"COMPLETED", "FAILED"}, timeout=60)["state"] == "COMPLETED"
        assert gw.client.job(i)["backend_id"] == before[i]
    keys = {f"fd-{i}.1" for i in ids}
    on_slurm = [r for r in _controller_jobs() if r["JobName"] in keys and r.get("StdOut", "").startswith(str(gw.home))]
    assert sorted(r["JobId"] for r in on_slurm) == sorted(before.values())


def test_shims_against_the_gateway(slurm_gateway: Any, tmp_path: Path) -> None:
    gw = slurm_gateway(tick=1.0, refresh=2.0)
    shims = tmp_path / "shims"
    assert gw.cli("shim", "install", str(shims), "--json").returncode == 0
    env = {**gw.env, "PATH": f"{shims}:{os.environ['PATH']}"}

    def run(*argv: str, cwd: Path = tmp_path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(argv), env=env, capture_output=True, text=True, timeout=120, cwd=cwd)

    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n#SBATCH -J shimmed\n#SBATCH --mem=100M\necho from-shim $1\nexit 5\n")
    out = run("sbatch", "--parsable", "--wait", str(script), "arg1")
    slurm_id = out.stdout.strip()
    assert out.returncode == 5 and slurm_id.isdigit(), out
    assert (tmp_path / f"slurm-{slurm_id}.out").read_text() == "from-shim arg1\n"
    jobs = gw.client.jobs(name="shimmed")
    assert len(jobs) == 1 and jobs[0]["backend_id"] == slurm_id and jobs[0]["state"] == "FAILED"

    time.sleep(2.5)  # the cached view refreshes at most every 2 s
    shown = run("squeue", "-h", "-t", "all", "-j", slurm_id, "-o", "%i %T %u")
    assert shown.stdout == f"{slurm_id} FAILED root\n"
    acct = run("sacct", "-P", "-n", "-j", slurm_id, "-o", "JobID,State,ExitCode")
    assert acct.stdout == f"{slurm_id}|FAILED|5:0\n"
    real = subprocess.run(["squeue", "-t", "all", "-j", slurm_id], capture_output=True, text=True)
    assert run("squeue", "-t", "all", "-j", slurm_id).stdout == real.stdout  # same text as Slurm's own

    long_job = run("sbatch", "--wrap", "sleep 300")
    long_id = long_job.stdout.split()[-1]
    assert run("scancel", long_id).returncode == 0
    gw_job = gw.client.jobs(active=False, limit=5)
    cancelled = [j for j in gw_job if j["backend_id"] == long_id]
    assert cancelled and gw.wait_state(cancelled[0]["id"], {"CANCELLED"}, timeout=30)

    before = gw.client.request("GET", "/v1/cluster")["slurm"]["controller_queries"]
    with ThreadPoolExecutor(8) as pool:
        outs = list(pool.map(lambda _: run("squeue", "--me", "-h"), range(40)))
    assert all(o.returncode == 0 for o in outs)
    after = gw.client.request("GET", "/v1/cluster")["slurm"]["controller_queries"]
    assert after - before <= 8  # 40 callers, a handful of shared refreshes (plus the gateway's own ticks)
