"""Shared GPUs on the embedded backend: what watching a share costs and how fast an overrun ends.

Run: .venv/bin/python bench/gpu_share.py [--runs 5]
No GPU needed: the stand-in tests/data/gpu/nvidia-smi (two 80 GiB devices) is put on PATH. Side by side in
one run: the cost of one nvidia-smi call (the stand-in; a real one is usually 20-60 ms) beside `python -c
pass`; one GpuWatch sample of a shared job (two calls), and the same sample through NVML (ctypes, against the
stand-in library tests/data/gpu/nvml_standin.c built with cc); and, through a real LocalBackend and shepherd, the
time from a job's process taking more device memory than it asked to the job's end (OUT_OF_MEMORY), which
the 1 s sampling bounds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from frontdesk.backends.base import BackendJob  # noqa: E402
from frontdesk.backends.gpuwatch import GpuWatch  # noqa: E402
from frontdesk.backends.local import LocalBackend  # noqa: E402
from frontdesk.config import Settings  # noqa: E402


def standin(tmp: Path) -> Path:
    bindir = tmp / "bin"
    (bindir / "apps").mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "data" / "gpu" / "nvidia-smi", bindir / "nvidia-smi")
    (bindir / "nvidia-smi").chmod(0o755)
    devices = [{"index": i, "name": "NVIDIA A100-SXM4-80GB", "memory_mib": 81920} for i in (0, 1)]
    (bindir / "gpus.json").write_text(json.dumps(devices))
    (bindir / "devices").write_text("".join(f"{d['index']} {d['memory_mib']} 0\n" for d in devices))  # NVML stand-in
    os.environ["PATH"] = f"{bindir}{os.pathsep}{os.environ['PATH']}"
    return bindir


def ms(argv: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(argv, capture_output=True, check=True)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def sample_ms(runs: int, nvml: bool = False) -> float:
    times = []
    for _ in range(runs):
        watch = GpuWatch("0", limit=20 * 2**30, nvml=nvml)
        assert (watch.nvml is not None) == nvml
        t0 = time.perf_counter()
        watch.sample(time.time(), {os.getpid()})
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


async def overrun_s(tmp: Path, apps: Path, n: int) -> float:
    home = tmp / f"home{n}"
    settings = Settings(home=home, runtime_dir=home / "run", socket=home / "run" / "none.sock", local_cpus=2)
    backend = LocalBackend(settings)
    await backend.start(lambda ids: None)
    mark = tmp / f"over{n}"
    # the job's child takes 23 GiB after a second; the time it does so is written beside it
    script = f'sleep 60 & sleep 1; date +%s.%N > {mark}; echo "$CUDA_VISIBLE_DEVICES 23654" > {apps}/$!; wait'
    job_dir = home / "jobs" / "1" / "attempt-1"
    job_dir.mkdir(parents=True)
    job = BackendJob(1, 1, "over", ["/bin/sh", "-c", script], home, {}, job_dir, gpus=1, gpu_memory_bytes=20 * 2**30)
    bid = await backend.submit(job)
    while True:
        st = (await backend.query([bid]))[bid]
        if st.state.terminal:
            break
        await asyncio.sleep(0.05)
    await backend.stop()
    assert st.state.value == "OUT_OF_MEMORY", st
    return float(st.ended_at or 0) - float(mark.read_text())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="fd-gpu-bench-"))
    bindir = standin(tmp)
    floor = ms([sys.executable, "-c", "pass"], args.runs * 4)
    smi = ms(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"], args.runs * 4)
    sample = sample_ms(args.runs * 4)
    cc = shutil.which("cc")
    if cc:  # the NVML stand-in library, built next to the same device files
        src = ROOT / "tests" / "data" / "gpu" / "nvml_standin.c"
        lib = bindir / "libnvidia-ml.so.1"
        subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(lib), str(src)], check=True)
        os.environ["FRONTDESK_NVML_LIB"] = str(lib)
        nvml_sample = sample_ms(args.runs * 4, nvml=True)
        del os.environ["FRONTDESK_NVML_LIB"]
    lat = [asyncio.run(overrun_s(tmp, bindir / "apps", i)) for i in range(args.runs)]
    print(f"python -c pass                      {floor:7.1f} ms")
    print(f"stand-in nvidia-smi (one query)     {smi:7.1f} ms  ({smi / floor:.1f}x python -c pass)")
    print(f"GpuWatch.sample of a shared job     {sample:7.1f} ms  (two nvidia-smi queries; once a second)")
    if cc:
        print(f"  the same sample through NVML      {nvml_sample:7.2f} ms  (ctypes, the stand-in library)")
    else:
        print("  the same sample through NVML      not measured: no cc to build the stand-in library")
    print(
        f"overrun -> OUT_OF_MEMORY             p50 {statistics.median(lat):.2f} s, max {max(lat):.2f} s"
        f" over {len(lat)} jobs (sampling every {GpuWatch.EVERY_LIMITED:g} s)"
    )
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
