"""What a freezer costs a job, on the embedded backend (backends/freezing.py).

Every job may be frozen, so that suspension switched on later covers jobs already running; only those started
while suspension is on join a v1 freezer cgroup at their start (the others are frozen by signals). This prints
why: side by side, interleaved in one run, a job start as the shepherd does it (Popen in a new session with a
preexec, wait for `true` to end) without a freezer cgroup, and with one (Freezer.create, join in the child,
check after the start, remove at the end; as root on cgroup v1, else the signal fallback, which costs nothing
at start); then what every job's shepherd pays while it runs: one `Pause.tick` with no request (a failed
open) per 0.1 s sample.

Run: .venv/bin/python bench/freezer_cost.py [--runs 200]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from frontdesk.backends.freezing import Freezer, Pause  # noqa: E402


def _nothing() -> None:
    pass


def _start(freezer: Freezer | None) -> float:
    t = time.perf_counter()
    preexec = freezer.join if freezer is not None else _nothing  # the shepherd always has a preexec: a fork
    proc = subprocess.Popen(["true"], start_new_session=True, preexec_fn=preexec)
    if freezer is not None:
        freezer.check(proc.pid)
    proc.wait()
    if freezer is not None:
        freezer.remove()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200)
    args = ap.parse_args()
    plain: list[float] = []
    frozen: list[float] = []
    kinds = set()
    create: list[float] = []
    for i in range(args.runs):
        plain.append(_start(None))
        t = time.perf_counter()
        freezer = Freezer.create(f"bench-{os.getpid()}-{i}", None)
        create.append(time.perf_counter() - t)
        kinds.add(freezer.kind)
        frozen.append(_start(freezer) + create[-1])
    with tempfile.TemporaryDirectory() as tmp:
        pause = Pause(Path(tmp), Freezer("signals", None), lambda: None, bound_s=60.0)
        t = time.perf_counter()
        for _ in range(args.runs * 10):
            pause.tick(time.time(), False, os.getpid(), lambda: [])
        tick = (time.perf_counter() - t) / (args.runs * 10)
    load = Path("/proc/loadavg").read_text().split()[:3]
    p, f = statistics.median(plain), statistics.median(frozen)
    print(f"load {' '.join(load)}; freezer kind: {', '.join(sorted(kinds))}; {args.runs} starts each, interleaved")
    print(f"job start+end, no freezer:   median {p * 1e3:.2f} ms")
    print(f"job start+end, with freezer: median {f * 1e3:.2f} ms  ({f / p:.2f}x; +{(f - p) * 1e3:.2f} ms per job)")
    print(f"Pause.tick with no request:  {tick * 1e6:.1f} us per 0.1 s sample ({tick / 0.1 * 100:.3f} % of a core)")


if __name__ == "__main__":
    main()
