"""An agent workload laid over a real trace: the agent-heavy mix on a real HPC machine.

The trace's jobs stay as they are (`agent=False`); agent jobs are added so that they make `share` of all jobs
(the published measurement: 55.8 %), in floods (a session fires a burst of trials within seconds), with the
measured runtime shape (median 193 s, 32.7 % under a minute), small widths (1-4 processors), requested times
rounded up to the minute and capped at the 10 min trial cap, and 10.3 % cancelled (about 4x the 2.3 % of human
jobs) part-way through. Each agent job is a trial (`trial=True`). Pure: jobs in, jobs out; randomness from a seed.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, replace
from statistics import NormalDist

from frontdesk.sim.workload import SimJob, Workload

__all__ = ["Overlay", "overlay_agents"]


@dataclass(frozen=True)
class Overlay:
    """The agent stream's shape; defaults from the published agent-vs-human measurement."""

    share: float = 0.558
    short_share: float = 0.327
    median_runtime: float = 193.0
    cancel_rate: float = 0.103
    burst_mean: float = 6.0
    """Mean trials per flood (geometric)."""
    burst_spread: float = 5.0
    """A flood's submissions fall within this many seconds."""
    sessions: int = 20
    widths: tuple[int, ...] = (1, 1, 2, 2, 4)
    walltime_cap: float = 600.0


def _agent_job(rng: random.Random, o: Overlay, k: int, t: float, session: int, procs: int) -> SimJob:
    # lognormal sigma such that P(runtime < 60 s) = short_share at this median
    sigma = (math.log(60.0) - math.log(o.median_runtime)) / NormalDist().inv_cdf(o.short_share)
    runtime = max(2.0, rng.lognormvariate(math.log(o.median_runtime), sigma))
    walltime = min(o.walltime_cap, max(60.0, math.ceil(runtime * rng.uniform(1.3, 3.0) / 60) * 60))
    runtime = min(runtime, walltime)
    cancelled = rng.random() < o.cancel_rate
    if cancelled:
        runtime = max(1.0, runtime * rng.uniform(0.05, 0.9))
    principal = f"agent{session:02d}"
    return SimJob(
        f"a{k}",
        t,
        runtime,
        walltime,
        min(procs, rng.choice(o.widths)),
        principal,
        group="agents",
        trial=True,
        template=f"{principal}:task{rng.randrange(40)}",
        cancelled=cancelled,
        agent=True,
    )


def overlay_agents(wl: Workload, overlay: Overlay | None = None, seed: int = 1) -> Workload:
    """`wl` plus agent jobs making `overlay.share` of all jobs, spread over the trace's submission span."""
    o = overlay or Overlay()
    if not 0 <= o.share < 1:
        raise ValueError(f"agent share must be in [0, 1), not {o.share}")
    base = [replace(j, agent=False) for j in wl.jobs]
    if not base or o.share == 0:
        return replace(wl, jobs=base)
    rng = random.Random(seed)
    procs = wl.machine.procs if wl.machine else max(j.cpus for j in base)
    want = round(len(base) * o.share / (1 - o.share))
    t0, t1 = min(j.submit for j in base), max(j.submit for j in base)
    agents: list[SimJob] = []
    while len(agents) < want:
        t = rng.uniform(t0, t1)
        session = rng.randrange(o.sessions)
        size = min(want - len(agents), 1 + int(rng.expovariate(1 / max(o.burst_mean - 1, 1e-9))))
        for _ in range(size):
            at = t + rng.uniform(0, o.burst_spread)
            agents.append(_agent_job(rng, o, len(agents), at, session, procs))
    jobs = sorted(base + agents, key=lambda j: j.submit)
    return replace(wl, name=f"{wl.name}+agents", jobs=jobs)
