"""Conservative backfill keeps its walk while no job ends (`textbook._conservative`); it must start every job
exactly when a rebuild of the profile at every pass does (the textbook definition, written out plainly here)."""

from __future__ import annotations

import bisect

from hypothesis import given, settings
from hypothesis import strategies as st

from frontdesk.sim import textbook
from frontdesk.sim.swf import Machine
from frontdesk.sim.textbook import ReplayState, Rule, _fcfs, replay
from frontdesk.sim.workload import SimJob, Workload


def _rebuilt(st_: ReplayState, now: float) -> None:
    """Conservative backfill as defined: a fresh profile at every pass, every queued job reserved in order."""
    _fcfs(st_, now)
    if not st_.queue or st_.free == 0:
        return
    times, free = [now], [st_.free]
    for end, i in st_.running:
        if end > times[-1]:
            times.append(end)
            free.append(free[-1])
        free[-1] += st_.jobs[i].cpus
    kept = []
    for i in list(st_.queue):
        job = st_.jobs[i]
        k = 0
        while True:  # the earliest breakpoint from which job.cpus stay free for job.walltime
            window = [f for t, f in zip(times, free, strict=True) if times[k] <= t < times[k] + job.walltime]
            if free[k] >= job.cpus and min(window, default=free[k]) >= job.cpus:
                break
            k += 1
        end = times[k] + job.walltime
        m = bisect.bisect_left(times, end, k)
        if m == len(times) or times[m] != end:
            times.insert(m, end)
            free.insert(m, free[m - 1])
        for x in range(k, m):
            free[x] -= job.cpus
        if k == 0:
            st_.start(i, now)
        else:
            kept.append(i)
    st_.queue = kept


job_st = st.tuples(
    st.integers(0, 40).map(float),  # submit
    st.integers(1, 8),  # processors
    st.integers(0, 30).map(float),  # runtime
    st.integers(1, 40).map(float),  # requested time (the runtime is capped at it)
)


@settings(max_examples=300, deadline=None)
@given(st.lists(job_st, min_size=1, max_size=25), st.integers(8, 12))
def test_kept_walk_starts_every_job_when_a_rebuild_does(
    jobs: list[tuple[float, int, float, float]], procs: int
) -> None:
    sims = [
        SimJob(f"j{k}", submit, min(run, req), req, p, "u")
        for k, (submit, p, run, req) in enumerate(sorted(jobs, key=lambda j: j[0]))
    ]
    wl = Workload("w", sims, 0.0, None, "swf", Machine(procs, 1))
    kept = {r.job.id: (r.start, r.end) for r in replay(wl, procs, Rule.CONSERVATIVE).records}
    textbook._RULES[Rule.CONSERVATIVE] = _rebuilt
    try:
        rebuilt = {r.job.id: (r.start, r.end) for r in replay(wl, procs, Rule.CONSERVATIVE).records}
    finally:
        textbook._RULES[Rule.CONSERVATIVE] = textbook._conservative
    assert kept == rebuilt
