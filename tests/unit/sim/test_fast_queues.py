"""The processor-pool replays read their queues through indexes (textbook EASY by width, conservative carrying
its walk across ends at the expected time, Slurm's priority order merged by nice); each must start every job
exactly when the plain walk over the whole queue does (the plain walks are written out here)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frontdesk.sim import slurm, textbook
from frontdesk.sim.slurm import SlurmModel, replay_slurm
from frontdesk.sim.swf import Machine
from frontdesk.sim.textbook import ReplayState, Rule, _fcfs, _shadow, replay
from frontdesk.sim.workload import SimJob, Workload


def workload(jobs: list[tuple[float, int, float, float]], procs: int) -> Workload:
    """Jobs as (submit, processors, runtime, requested time)."""
    sims = [
        SimJob(f"j{k}", submit, run, req, p, "u")
        for k, (submit, p, run, req) in enumerate(sorted(jobs, key=lambda j: j[0]))
    ]
    return Workload("hand", sims, 0.0, None, "swf", Machine(procs, 1))


def _plain_easy(st_: ReplayState, now: float) -> None:
    """Textbook EASY as written: every queued job after the head, in order, until no processor is free."""
    _fcfs(st_, now)
    if not st_.queue or st_.free == 0:
        return
    jobs = st_.jobs
    shadow, extra = _shadow(st_, jobs[st_.queue[0]].cpus)
    kept = [st_.queue[0]]
    for k in range(1, len(st_.queue)):
        i = st_.queue[k]
        job = jobs[i]
        if job.cpus <= st_.free:
            if now + job.walltime <= shadow:
                st_.start(i, now)
                continue
            if job.cpus <= extra:
                extra -= job.cpus
                st_.start(i, now)
                continue
        kept.append(i)
    st_.queue = kept


# widths up to the machine's, requests often exact (a job then ends at its expected end), many jobs at once
jobs_strategy = st.lists(
    st.tuples(
        st.integers(0, 60).map(float),
        st.integers(1, 8),
        st.integers(1, 30).map(float),
        st.sampled_from([0.0, 0.0, 5.0, 17.0]),
    ).map(lambda t: (t[0], t[1], t[2], t[2] + t[3])),
    min_size=1,
    max_size=40,
)


def _starts(res: object) -> list[tuple[str, float | None]]:
    return sorted((r.job.id, r.start) for r in res.records)  # type: ignore[attr-defined]


@settings(max_examples=200, deadline=None)
@given(jobs_strategy, st.integers(8, 12))
def test_easy_by_width_starts_what_the_plain_walk_starts(
    jobs: list[tuple[float, int, float, float]], procs: int
) -> None:
    wl = workload(jobs, procs)
    fast = _starts(replay(wl, procs, Rule.EASY))
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(textbook._RULES, Rule.EASY, _plain_easy)
        plain = _starts(replay(wl, procs, Rule.EASY))
    assert fast == plain


class _PlainOrder(slurm._Slurm):
    """Slurm's priority order as a sort of the whole queue at every pass."""

    def order(self, now: float) -> list[int]:  # type: ignore[override]
        self._sync()  # (the lists by nice are kept, as the fast order keeps them)
        return sorted(self.st.queue, key=self._prio(now))


@settings(max_examples=150, deadline=None)
@given(
    jobs_strategy,
    st.integers(8, 12),
    st.lists(st.sampled_from([0, 0, 500, 9999]), min_size=40, max_size=40),
    st.sampled_from([0.0, 1000.0]),
    st.sampled_from([30.0, 604_800.0]),
)
def test_slurm_merged_order_starts_what_a_full_sort_starts(
    jobs: list[tuple[float, int, float, float]], procs: int, nice: list[int], weight: float, max_age: float
) -> None:
    wl = workload(jobs, procs)
    m = SlurmModel(bf_interval=0, bf_resolution=0, bf_max_job_test=5, age_weight=weight, max_age=max_age)
    got = {}
    for name, cls in (("fast", slurm._Slurm), ("plain", _PlainOrder)):

        def build(wl_: Workload, procs_: int, model: SlurmModel, _nice: list[int], cls: type = cls) -> object:
            return cls(wl_, procs_, model, nice[: len(wl_.jobs)])

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(slurm, "_Slurm", build)
            got[name] = _starts(replay_slurm(wl, procs, m))
    assert got["fast"] == got["plain"]
