"""Simulator speed: simulated jobs per CPU-minute for every policy, and the growth from N to 10 N jobs.

    python bench/sim_speed.py                       # synthetic SWF trace, 10k and 100k jobs
    python bench/sim_speed.py --jobs 2000           # 2k and 20k (quick)
    python bench/sim_speed.py --trace lublin_256.swf  # repeat a real trace's jobs instead of the synthetic ones
    python bench/sim_speed.py --traces DIR --jobs 1000  # every *.swf / *.swf.gz in DIR, one table each, and the
                                                      # same trace's first 10 N jobs (not repeated) beside it

The big run is the small one repeated 10 times back to back (same load), so a linear simulator shows a growth
ratio of about 10 (CPU time of 10 N jobs / CPU time of N jobs); quadratic behaviour shows as ~100.
Target (issue 15): >= 100,000 jobs per CPU-minute for every policy, growth ~10.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from frontdesk.sim.compare import load_workload, run  # noqa: E402
from frontdesk.sim.swf import Machine  # noqa: E402
from frontdesk.sim.workload import SimJob, Workload  # noqa: E402

POLICIES = (
    "fcfs",
    "easy-textbook",
    "conservative",
    "slurm",
    "slurm-frontdesk",
    "fifo",
    "easy",
    "frontdesk",
    "frontdesk-suspend",
)


def synthetic(n: int, procs: int = 256, seed: int = 1, load: float = 0.85) -> list[SimJob]:
    """SWF-like jobs (powers-of-two widths, lognormal runtimes, requests 1-3x) at `load` offered load."""
    rng = random.Random(seed)
    shapes = []
    for _ in range(n):
        width = min(procs, 2 ** rng.choice([0, 0, 0, 1, 2, 3, 4, 5, 6, 7]))
        run_s = min(rng.lognormvariate(7.0, 1.6), 36 * 3600)
        shapes.append((width, run_s, run_s * rng.uniform(1.0, 3.0), f"u{rng.randrange(60)}"))
    mean_gap = sum(w * r for w, r, _, _ in shapes) / n / (load * procs)
    jobs, t = [], 0.0
    for i, (width, run_s, req, user) in enumerate(shapes):
        jobs.append(SimJob(f"s{i}", t, run_s, req, width, user))
        t += rng.expovariate(1 / mean_gap)
    return jobs


def repeat(jobs: list[SimJob], times: int) -> list[SimJob]:
    span = max(j.submit for j in jobs) - min(j.submit for j in jobs) + 1.0
    out = []
    for k in range(times):
        out += [replace(j, id=f"{j.id}.{k}", submit=j.submit + k * span) for j in jobs]
    return out


def table(small: Workload, big: Workload, policies: list[str], label: str) -> None:
    print(f"{label}: {small.machine}; {len(small.jobs)} and {len(big.jobs)} jobs")
    print(f"{'policy':<16}{'jobs/CPU-min (N)':>18}{'jobs/CPU-min (10N)':>20}{'growth 10N/N':>14}")
    for pol in policies:
        secs = []
        for wl in (small, big):
            t0 = time.process_time()
            run(wl, pol)
            secs.append(max(1e-9, time.process_time() - t0))
        rates = [len(w.jobs) / s * 60 for w, s in zip((small, big), secs, strict=True)]
        print(f"{pol:<16}{rates[0]:>18,.0f}{rates[1]:>20,.0f}{secs[1] / secs[0]:>14.1f}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=10_000)
    ap.add_argument("--trace", help="an SWF file whose first --jobs jobs are used (its own machine)")
    ap.add_argument("--traces", help="a folder of SWF files (bench/get_traces.py fills one)")
    ap.add_argument("--policy", action="append", help=f"default: {' '.join(POLICIES)}")
    args = ap.parse_args()
    policies = args.policy or list(POLICIES)
    if args.traces:
        paths = sorted(p for p in Path(args.traces).iterdir() if p.name.endswith((".swf", ".swf.gz")))
        if not paths:
            print(f"{args.traces}: no .swf or .swf.gz file", file=sys.stderr)
            return 2
        for path in paths:
            wl = load_workload(str(path))
            small = Workload("small", wl.jobs[: args.jobs], 0.0, None, "swf", wl.machine)
            big = Workload("big", wl.jobs[: 10 * args.jobs], 0.0, None, "swf", wl.machine)
            table(small, big, policies, path.name)
            if len(big.jobs) < 10 * args.jobs:
                print(f"  (the trace has {len(wl.jobs)} jobs: the growth is over {len(big.jobs)} of them)")
        return 0
    if args.trace:
        wl = load_workload(args.trace)
        base, machine = wl.jobs[: args.jobs], wl.machine
    else:
        base, machine = synthetic(args.jobs), Machine(256, 256, "synthetic")
    small = Workload("small", base, 0.0, None, "swf", machine)
    big = Workload("big", repeat(base, 10), 0.0, None, "swf", machine)
    table(small, big, policies, "repeated 10 times")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
