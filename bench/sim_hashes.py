"""Decision hashes: one hash of every job's (id, start, end) per policy per workload, to show that a speed-only
change keeps every decision.

    python bench/sim_hashes.py > before.txt     # on the code before the change
    python bench/sim_hashes.py > after.txt      # after it; `diff before.txt after.txt` must be empty
    python bench/sim_hashes.py --scan           # the node-based policies without the shape index (the reference)
    python bench/sim_hashes.py --swf lublin_256.swf --swf CTC-SP2-1996-3.1-cln.swf.gz  # + real traces' first jobs
    python bench/sim_hashes.py --swf lublin_256.swf --overlay  # + those jobs with the agent overlay too

Workloads: the synthetic trace of bench/sim_speed.py (256 one-core nodes), the same jobs on 32 nodes of 8 cores,
NASA-iPSC with the agent overlay (when --nasa names it), the first --jobs jobs of each --swf trace on its own
machine (the backlogged ones, Lublin and CTC, exercise the reservation search most), the validation mix, and an
agent day on the GPU cluster.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from sim_speed import POLICIES, synthetic  # noqa: E402

from frontdesk.sim import compare, engine  # noqa: E402
from frontdesk.sim.compare import load_workload, run  # noqa: E402
from frontdesk.sim.engine import SimResult  # noqa: E402
from frontdesk.sim.overlay import overlay_agents  # noqa: E402
from frontdesk.sim.swf import Machine  # noqa: E402
from frontdesk.sim.workload import AgentMix, Workload, agent_day, validation_mix  # noqa: E402

NODE_POLICIES = ("fifo", "easy", "frontdesk", "frontdesk-suspend")


def digest(res: SimResult) -> str:
    h = hashlib.sha256()
    for r in sorted(res.records, key=lambda r: r.job.id):
        h.update(f"{r.job.id} {r.start!r} {r.end!r} {r.preempted} {r.borrowed}\n".encode())
    return h.hexdigest()[:16]


def workloads(
    n: int, nasa: str | None, swf: tuple[str, ...] = (), overlay: bool = False
) -> list[tuple[Workload, tuple[str, ...]]]:
    base = synthetic(n)
    out = [
        (Workload("synthetic-1core", base, 0.0, None, "swf", Machine(256, 256, "synthetic")), POLICIES),
        (Workload("synthetic-8core", base, 0.0, None, "swf", Machine(256, 32, "synthetic")), POLICIES),
    ]
    if nasa:
        wl = load_workload(nasa)
        out.append((overlay_agents(Workload(wl.name, wl.jobs[:n], 0.0, None, "swf", wl.machine)), POLICIES))
    for path in swf:
        wl = load_workload(path)
        out.append((Workload(wl.name, wl.jobs[:n], 0.0, None, "swf", wl.machine), POLICIES))
        if overlay:  # the same jobs with the agent stream: frontdesk's trials, lanes and suspensions at work
            out.append((overlay_agents(out[-1][0]), POLICIES))
    out.append((validation_mix(1), NODE_POLICIES))
    out.append((agent_day(AgentMix(hours=6.0), 1), NODE_POLICIES))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=3000)
    ap.add_argument("--nasa", help="NASA-iPSC SWF file (overlaid with agent jobs)")
    ap.add_argument("--swf", action="append", default=[], help="an SWF trace whose first --jobs jobs are replayed")
    ap.add_argument("--overlay", action="store_true", help="each --swf trace again with the agent overlay")
    ap.add_argument("--policy", action="append")
    ap.add_argument("--scan", action="store_true", help="simulate without the shape index (every placement scans)")
    args = ap.parse_args()
    if args.scan:
        compare.simulate = functools.partial(engine.simulate, indexed=False)  # type: ignore[assignment]
    for wl, pols in workloads(args.jobs, args.nasa, tuple(args.swf), args.overlay):
        for pol in args.policy or pols:
            if pol in pols:
                print(f"{wl.name:<24}{pol:<18}{digest(run(wl, pol))}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
