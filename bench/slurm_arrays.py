#!/usr/bin/env python3
"""Slurm job arrays on the lab, in one run: one `sbatch --array` against one sbatch per task.

    sudo .venv/bin/python bench/slurm_arrays.py [--tasks 100,1000] [--single 100]

Drives SlurmBackend directly (no gateway) and prints, side by side:
- submitting N tasks as ONE array (render, links, one sbatch): wall time, sbatch calls, script size;
- the same for `--single` tasks submitted one sbatch each (the old way of the sbatch shim);
- one batched query answering every task id (one `scontrol -o show job`), wall time;
- cancelling the whole array (one scancel).
Tasks sleep; everything is cancelled at the end. The lab is shared: figures vary with its load.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LAB = Path(os.environ.get("FRONTDESK_SLURM_LAB", "/var/lib/frontdesk-slurm-lab"))

from frontdesk.backends.base import BackendJob  # noqa: E402
from frontdesk.config import Settings  # noqa: E402
from frontdesk.gateway import make_backend  # noqa: E402


def tasks(settings: Settings, n: int, array: bool) -> list[BackendJob]:
    """n attempts that differ in command and environment, as a sweep renders them."""
    out = []
    for i in range(n):
        job_dir = settings.jobs_dir / f"{i + 1}" / "1"
        job_dir.mkdir(parents=True, exist_ok=True)
        job = BackendJob(
            job_id=i + 1,
            attempt=1,
            name=f"bench[{i}]",
            argv=["sleep", "300", str(i)],
            workdir=settings.home,
            env={"FRONTDESK_JOB_ID": str(i + 1), "SEED": str(i), "PROJECT": "bench"},
            job_dir=job_dir,
            partition="test",
        )
        out.append(dataclasses.replace(job, array_id=1000, array_index=i) if array else job)
    return out


async def one_array(settings: Settings, n: int) -> dict[str, Any]:
    b = make_backend(settings)
    await b.start(lambda ids: None)
    jobs = tasks(settings, n, array=True)
    t0 = time.perf_counter()
    ids = await b.submit_array(jobs, None)
    submit = time.perf_counter() - t0
    await asyncio.sleep(1.0)
    t0 = time.perf_counter()
    got = await b.query(ids)
    query = time.perf_counter() - t0
    script = (jobs[0].job_dir / "array" / "sbatch.sh").stat().st_size
    t0 = time.perf_counter()
    await b.cancel(ids[0].split("_")[0])
    cancel = time.perf_counter() - t0
    return {
        "submit_s": submit,
        "sbatch": b.runner.calls["sbatch"],
        "script_kb": script / 1024,
        "query_s": query,
        "answered": len(got),
        "cancel_s": cancel,
    }


async def one_by_one(settings: Settings, n: int) -> dict[str, Any]:
    b = make_backend(settings)
    await b.start(lambda ids: None)
    jobs = tasks(settings, n, array=False)
    t0 = time.perf_counter()
    ids = [await b.submit(job) for job in jobs]
    submit = time.perf_counter() - t0
    for bid in ids:
        await b.cancel(bid)
    return {"submit_s": submit, "sbatch": b.runner.calls["sbatch"]}


def settings_for(conf: Path) -> Settings:
    home = Path(tempfile.mkdtemp(prefix="fd-bench-arrays-", dir="/tmp"))
    return Settings(
        home=home,
        runtime_dir=home / "run",
        socket=home / "run" / "gw.sock",
        backend="slurm",
        sections={"slurm": {"conf": str(conf), "notify_dir": str(home / "notify")}},
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", default="100,1000")
    p.add_argument("--single", type=int, default=100)
    args = p.parse_args()
    if os.geteuid() != 0:
        print("slurm_arrays: needs root for the lab cluster (scripts/slurm-lab up)")
        return 2
    subprocess.run([str(ROOT / "scripts" / "slurm-lab"), "up"], check=True, capture_output=True)
    conf = LAB / "etc" / "slurm.conf"
    os.environ["SLURM_CONF"] = str(conf)
    print(f"# load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("tasks | way            | submit wall | sbatch calls | script   | one query for every task id")
    homes = []
    try:
        s = settings_for(conf)
        homes.append(s.home)
        r = asyncio.run(one_by_one(s, args.single))
        print(f"{args.single:>5} | one sbatch each | {r['submit_s'] * 1000:8.0f} ms | {r['sbatch']:>12} |          |")
        for n in [int(x) for x in args.tasks.split(",") if x.strip()]:
            s = settings_for(conf)
            homes.append(s.home)
            r = asyncio.run(one_array(s, n))
            print(
                f"{n:>5} | one array      | {r['submit_s'] * 1000:8.0f} ms | {r['sbatch']:>12} | "
                f"{r['script_kb']:5.0f} KB | {r['query_s'] * 1000:.0f} ms ({r['answered']} answered); "
                f"scancel of the array {r['cancel_s'] * 1000:.0f} ms"
            )
    finally:
        for home in homes:
            shutil.rmtree(home, ignore_errors=True)
    print(f"# load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
