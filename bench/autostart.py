"""What zero setup costs: the first `frontdesk run --wait -- echo hi` on a fresh HOME (it starts the gateway)
beside the same command once the gateway runs, each a fresh process, in one run.

Run: .venv/bin/python bench/autostart.py [--rounds 5]
Each round makes a fresh HOME and XDG_RUNTIME_DIR, times the first call and 5 later ones, then stops the
gateway it started (by the pid in its state directory's lock file).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _round(warm_runs: int) -> tuple[float, list[float]]:
    root = Path(tempfile.mkdtemp(prefix="fd-bench-auto-", dir="/tmp"))
    for name in ("home", "run", "work"):
        (root / name).mkdir(mode=0o700)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(root / "home"),
        "XDG_RUNTIME_DIR": str(root / "run"),
    }
    argv = [sys.executable, "-m", "frontdesk.cli.main", "run", "--wait", "--", "echo", "hi"]

    def timed() -> float:
        t = time.perf_counter()
        subprocess.run(argv, env=env, cwd=root / "work", check=True, capture_output=True)
        return time.perf_counter() - t

    try:
        first = timed()
        warm = [timed() for _ in range(warm_runs)]
    finally:
        lock = root / "home" / ".local" / "state" / "frontdesk" / "gateway.lock"
        try:
            pid = int(lock.read_text().strip())
            os.kill(pid, signal.SIGTERM)
            while Path(f"/proc/{pid}").exists():
                time.sleep(0.05)
        except (OSError, ValueError):
            pass
        shutil.rmtree(root, ignore_errors=True)
    return first, warm


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    firsts, warms = [], []
    for _ in range(args.rounds):
        first, warm = _round(5)
        firsts.append(first)
        warms.extend(warm)
    f, w = statistics.median(firsts), statistics.median(warms)
    print(f"first call (starts the gateway)   median {f * 1000:7.1f} ms")
    print(f"later calls (gateway running)     median {w * 1000:7.1f} ms")
    print(f"ratio first/later                 {f / w:5.1f}x   ({args.rounds} rounds)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
