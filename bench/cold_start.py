"""Cold start of the commands that sit on the agent's hot path, each a fresh process, beside `python -c pass`.

Run: .venv/bin/python bench/cold_start.py [--runs 20]
Commands are run interleaved (round-robin) so machine noise hits them alike; prints medians and the ratio to
a bare interpreter start. Hook and shim entry points are measured by bench/agent_hook_coldstart.py and
bench/slurm_shield.py; the guard's by bench/guard_corpus.py.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from frontdesk.demo import start_gateway  # noqa: E402

PY = sys.executable


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    home = Path(tempfile.mkdtemp(prefix="fd-cold-", dir="/tmp"))
    proc, client = start_gateway(home, extra_env={"FRONTDESK_PLUGINS": "none"})
    job = client.submit(spec={"command": ["true"]}, context={"cwd": "/tmp"})["id"]
    client.wait([job], "all", 30)
    env = {**os.environ, "FRONTDESK_HOME": str(home)}
    cases = {
        "python -c pass": [PY, "-c", "pass"],
        "frontdesk --version": [PY, "-m", "frontdesk.cli.main", "--version"],
        "frontdesk status ID --json": [PY, "-m", "frontdesk.cli.main", "status", str(job), "--json"],
        "frontdesk report ID": [PY, "-m", "frontdesk.cli.main", "report", str(job)],
        "python -c 'import httpx' (reference)": [PY, "-c", "import httpx"],
        "python -c 'import fastapi' (reference)": [PY, "-c", "import fastapi"],
    }
    times: dict[str, list[float]] = {k: [] for k in cases}
    try:
        for _ in range(args.runs):
            for name, argv in cases.items():
                t = time.perf_counter()
                subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
                times[name].append(time.perf_counter() - t)
    finally:
        proc.terminate()
        proc.wait(timeout=15)
        shutil.rmtree(home, ignore_errors=True)
    base = statistics.median(times["python -c pass"])
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:<42} median {med * 1000:6.1f} ms   {med / base:4.1f}x python -c pass")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
