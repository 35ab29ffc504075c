"""The observe sampler's CPU cost at 5 Hz: the process table as it is, with ~2,000 more, and with churn.

Spawns N `sleep` processes (bounded: they are killed at the end and exit on their own after 10 minutes),
runs the sampler in this process for S seconds at 5 Hz and prints its CPU time as a percentage of one core,
side by side with the baseline measured in the same run (the baseline already has the churn of whatever else
runs on the machine). Usage: python bench/observe_overhead.py [N] [S]
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time

from frontdesk.guard.secrets import redact
from frontdesk.telemetry.sampler import Sampler


def measure(seconds: float, hz: float = 5.0) -> tuple[float, float, int]:
    """(% of one core in steady state, first tick's CPU ms, live processes) for a fresh sampler."""
    sampler = Sampler(redact)
    c0 = time.process_time()
    sampler.tick()
    first_ms = (time.process_time() - c0) * 1000
    t0, c1 = time.monotonic(), time.process_time()
    next_at = t0
    while time.monotonic() - t0 < seconds:
        sampler.tick()
        next_at += 1 / hz
        time.sleep(max(0.0, next_at - time.monotonic()))
    wall = time.monotonic() - t0
    return 100 * (time.process_time() - c1) / wall, first_ms, sampler.stats.live


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 10.0
    soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
    if soft != resource.RLIM_INFINITY and soft < n + 500:
        sys.exit(f"RLIMIT_NPROC {soft} is too low for {n} processes")
    base = measure(seconds)
    sleeps: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(n):
            sleeps.append(subprocess.Popen(["sleep", "600"], stdin=subprocess.DEVNULL, close_fds=True))
        loaded = measure(seconds)
        # ~20 new processes a second from another process (its forks are not counted here)
        churn = subprocess.Popen(["sh", "-c", "while :; do sleep 0.05; done"], stdin=subprocess.DEVNULL)
        try:
            churned = measure(seconds)
        finally:
            churn.kill()
            churn.wait()
    finally:
        for p in sleeps:
            try:
                os.kill(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for p in sleeps:
            p.wait()
    print(f"{'':>24} {'baseline':>10} {'+' + str(n) + ' sleeps':>14} {'+ 20 new/s':>12}")
    print(f"{'live processes':>24} {base[2]:>10} {loaded[2]:>14} {churned[2]:>12}")
    print(f"{'first tick CPU ms':>24} {base[1]:>10.1f} {loaded[1]:>14.1f} {churned[1]:>12.1f}")
    print(f"{'steady % of one core':>24} {base[0]:>10.3f} {loaded[0]:>14.3f} {churned[0]:>12.3f}")
    print(f"ratio to baseline: {loaded[0] / base[0]:.1f}x, {churned[0] / base[0]:.1f}x (target: <= 1 % of one core)")


if __name__ == "__main__":
    main()
