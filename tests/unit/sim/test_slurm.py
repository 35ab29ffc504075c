"""The Slurm model (priority, main scheduler, sched/backfill with bf_* parameters), checked by hand."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from frontdesk.backends.slurm.render import slurm_nice
from frontdesk.policy.config import PriorityConfig
from frontdesk.policy.priority import slurm_priority
from frontdesk.sim.compare import run
from frontdesk.sim.slurm import SlurmModel, frontdesk_nice, replay_slurm
from frontdesk.sim.swf import Machine
from frontdesk.sim.workload import SimJob, Workload

EXACT = SlurmModel(bf_interval=0, bf_resolution=0)
"""Backfill after every event, times not rounded: the hand-checkable core."""


def workload(jobs: list[tuple[float, int, float, float]], procs: int = 4) -> Workload:
    """Jobs as (submit, processors, runtime, requested time), named A, B, C, ..."""
    sims = [
        SimJob(chr(ord("A") + k), submit, run, req, p, "u")
        for k, (submit, p, run, req) in enumerate(sorted(jobs, key=lambda j: j[0]))
    ]
    return Workload("hand", sims, 0.0, None, "swf", Machine(procs, 1))


def starts(wl: Workload, model: SlurmModel = EXACT) -> dict[str, float | None]:
    assert wl.machine is not None
    return {r.job.id: r.start for r in replay_slurm(wl, wl.machine.procs, model).records}


def test_backfill_protects_every_tested_job_like_conservative() -> None:
    """4 processors. A (2 procs, 10 s) from 0. B (4 procs) at 1: reserved at 10-20. C (2 procs, 30 s) at 2 would
    overlap B: reserved at 20-50. D (2 procs, 15 s) at 3: free now but not past 10, then 2 free from 20 (C has
    the other 2): reserved 20-35. E (2 procs, 5 s) at 4 ends at 9 < 10: backfilled now. EASY would protect B
    only; here C and D keep their places too."""
    wl = workload([(0, 2, 10, 10), (1, 4, 10, 10), (2, 2, 30, 30), (3, 2, 15, 15), (4, 2, 5, 5)])
    assert starts(wl) == {"A": 0, "B": 10, "C": 20, "D": 20, "E": 4}
    assert starts(wl) == {r.job.id: r.start for r in run(wl, "conservative").records}


def test_bf_max_job_test_leaves_later_jobs_untested() -> None:
    """The case above: E is the fourth queued job. With bf_max_job_test = 3 the backfill pass never looks at
    it: it waits for the main scheduler, which starts C and D at 20 and E when D ends (35)."""
    wl = workload([(0, 2, 10, 10), (1, 4, 10, 10), (2, 2, 30, 30), (3, 2, 15, 15), (4, 2, 5, 5)])
    assert starts(wl, SlurmModel(bf_interval=0, bf_resolution=0, bf_max_job_test=4))["E"] == 4
    assert starts(wl, SlurmModel(bf_interval=0, bf_resolution=0, bf_max_job_test=3))["E"] == 35


def test_bf_window_skips_jobs_whose_earliest_start_is_beyond_it() -> None:
    """4 processors. A (4 procs, 10 s) from 0; B (2 procs, 50 s) at 1, C (4 procs, 10 s) at 2, D (2 procs, 100 s)
    at 3. At 10 B starts; C's earliest start is 60. With the default window C is reserved at 60-70, so D (which
    would run past 60) waits until 70. With a 25 s window, 60 lies beyond 10 + 25: C gets no reservation, D
    starts at 10 and C waits until D ends (110)."""
    wl = workload([(0, 4, 10, 10), (1, 2, 50, 50), (2, 4, 10, 10), (3, 2, 100, 100)])
    assert starts(wl) == {"A": 0, "B": 10, "C": 60, "D": 70}
    narrow = SlurmModel(bf_interval=0, bf_resolution=0, bf_window=25)
    assert starts(wl, narrow) == {"A": 0, "B": 10, "C": 110, "D": 10}


def test_bf_resolution_rounds_ends_up_so_a_job_that_just_fits_is_not_backfilled() -> None:
    """4 processors. A (2 procs, 100 s) from 0. B (4 procs, 10 s) at 1. C (2 procs, 95 s) at 5 ends at 100, when
    B's reservation begins: backfilled at 5 with exact times. With bf_resolution 60 A's end rounds to 120 and
    C's length to 120: 5 + 120 > 120, so C waits for B (100-110) and starts at 110."""
    wl = workload([(0, 2, 100, 100), (1, 4, 10, 10), (5, 2, 95, 95)])
    assert starts(wl) == {"A": 0, "B": 100, "C": 5}
    assert starts(wl, SlurmModel(bf_interval=0, bf_resolution=60)) == {"A": 0, "B": 100, "C": 110}


def test_bf_interval_runs_backfill_on_its_own_clock() -> None:
    """C (2 procs, 50 s) arrives at 5 beside A (2 procs, 100 s) and the blocked B: the main scheduler stops at
    B, and the next backfill pass is at 30 (every 30 s), where C still ends before 100: it starts at 30."""
    wl = workload([(0, 2, 100, 100), (1, 4, 10, 10), (5, 2, 50, 50)])
    assert starts(wl, SlurmModel(bf_interval=30, bf_resolution=0)) == {"A": 0, "B": 100, "C": 30}


def test_frontdesk_steering_puts_an_agent_job_ahead_of_a_waiting_hpc_job() -> None:
    """64 processors. A (64 procs, 100 s) from 0. B: an hpc job (64 procs, 1 h) at 1. C: an agent-sized job
    (2 procs, 5 min) at 2. Plain Slurm (FIFO): B starts at 100, C after it. With frontdesk's nice (agent enters
    high, hpc low), C starts first at 100 and B waits for it (400)."""
    wl = workload([(0, 64, 100, 100), (1, 64, 3600, 3600), (2, 2, 300, 300)], procs=64)
    assert starts(wl) == {"A": 0, "B": 100, "C": 3700}
    steered = SlurmModel(bf_interval=0, bf_resolution=0, steer=True)
    assert starts(wl, steered) == {"A": 0, "B": 400, "C": 100}


def test_the_nice_is_the_one_the_slurm_backend_renders() -> None:
    cfg = PriorityConfig()
    for cls, trial in (("agent", False), ("agent", True), ("hpc", False), ("training", False)):
        assert frontdesk_nice(cls, trial, cfg) == slurm_nice(slurm_priority(cls, trial, 1.0, cfg))
    assert frontdesk_nice("agent", False, cfg) < frontdesk_nice("hpc", False, cfg)


jobs_strategy = st.lists(
    st.tuples(
        st.integers(0, 200).map(float),
        st.integers(1, 6),
        st.integers(1, 90).map(float),
        st.integers(0, 60).map(float),
    ).map(lambda t: (t[0], t[1], t[2], t[2] + t[3])),
    min_size=1,
    max_size=14,
)
models = st.builds(
    SlurmModel,
    bf_interval=st.sampled_from([0.0, 7.0, 30.0]),
    bf_resolution=st.sampled_from([0.0, 1.0, 20.0]),
    bf_window=st.sampled_from([30.0, 86_400.0]),
    bf_max_job_test=st.integers(1, 5),
    age_weight=st.sampled_from([0.0, 1000.0]),
    max_age=st.sampled_from([60.0, 604_800.0]),
)


@settings(max_examples=150, deadline=None)
@given(jobs_strategy, st.integers(6, 8), models)
def test_every_job_runs_within_capacity(jobs: list[tuple[float, int, float, float]], procs: int, m: SlurmModel) -> None:
    wl = workload(jobs, procs)
    recs = replay_slurm(wl, procs, m).records
    assert all(r.start is not None and r.end is not None and r.start >= r.submit for r in recs)
    for t in sorted({r.start for r in recs}):
        used = sum(r.job.cpus for r in recs if r.start <= t < r.end)  # type: ignore[operator]
        assert used <= procs, (t, used)


@settings(max_examples=100, deadline=None)
@given(jobs_strategy, st.integers(6, 8))
def test_with_exact_times_and_every_job_tested_it_is_conservative_backfill(
    jobs: list[tuple[float, int, float, float]], procs: int
) -> None:
    wl = workload(jobs, procs)
    assert starts(wl) == {r.job.id: r.start for r in run(wl, "conservative").records}
