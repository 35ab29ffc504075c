"""Jobs that asked no GPU, on a machine with GPUs: what watching them costs per job and per tick.

Run: .venv/bin/python bench/gpu_noask.py [--runs 20] [--jobs 50]
No GPU needed: the stand-in tests/data/gpu/nvidia-smi (two 80 GiB devices) is put on PATH (bench/gpu_share.py).
Side by side, interleaved in one run: the gateway's one read of every device's processes (local/gpupoll.py:
nvidia-smi, what each job would pay if it read for itself), and one job's shepherd reading the shared list
(gpu-apps.json: a stat and a small read, GpuWatch.sample); then a tick for N such jobs both ways.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from gpu_share import standin  # noqa: E402

from frontdesk.backends.gpuwatch import GpuWatch  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=50)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        bindir = standin(tmp)
        holders = [subprocess.Popen(["sleep", "300"]) for _ in (0, 1)]  # live pids: the stand-in lists only those
        for dev, proc in enumerate(holders):
            (bindir / "apps" / str(proc.pid)).write_text(f"{dev} 1000\n")
        reader = GpuWatch("", every=True)
        reader.apps_elsewhere()  # the uuids, read once
        listing = tmp / "gpu-apps.json"
        read, shepherd = [], []
        for i in range(args.runs):
            t0 = time.perf_counter()
            found = reader.apps_elsewhere()
            read.append((time.perf_counter() - t0) * 1000)
            assert found, "the stand-in listed no process"
            listing.write_text(json.dumps({"at": time.time(), "apps": [list(r) for r in found]}))
            os.utime(listing, (time.time(), time.time() - i * 1e-3))  # a new mtime each round: the file is read
            watch = GpuWatch("", apps=str(listing))
            t0 = time.perf_counter()
            assert watch.sample(time.time(), {os.getpid()}) is None
            shepherd.append((time.perf_counter() - t0) * 1000)
        one, per = statistics.median(read), statistics.median(shepherd)
        print(f"load {open('/proc/loadavg').read().split()[:3]}  runs {args.runs}  (medians)")
        print(f"one nvidia-smi read of every device's processes: {one:.2f} ms")
        print(f"one no-GPU job's shepherd reading the shared list: {per:.3f} ms  ({one / per:.0f}x cheaper)")
        n = args.jobs
        print(
            f"a 2 s tick for {n} no-GPU jobs: shared {one + n * per:.1f} ms (1 read + {n} file reads) vs "
            f"{n * one:.1f} ms if each job read for itself ({n * one / (one + n * per):.1f}x)"
        )
        print("a machine without GPUs: no poll, no file, nothing per job (GpuPoll.real is false)")
        for proc in holders:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    main()
