"""The lower bound on trial waits: hand cases, and soundness against schedules the simulator really makes."""

from __future__ import annotations

import pytest

from frontdesk.sim.compare import run
from frontdesk.sim.overlay import Overlay, overlay_agents
from frontdesk.sim.swf import Machine
from frontdesk.sim.trialbound import (
    Arrival,
    Blocking,
    delay_budget,
    dodge_budget,
    inputs,
    late_at_least,
    p95_lower_bound,
    trial_bound,
)
from frontdesk.sim.workload import SimJob, Workload

TRIALS = [Arrival(100.0 * i, 1) for i in range(1, 10)]  # 100, 200, ..., 900 s
FULL = [Blocking(0.0, 1000.0, 4)]  # the whole 4-processor machine from 0 s for 1,000 s


def test_a_full_width_job_started_at_once_makes_every_trial_inside_it_wait() -> None:
    assert late_at_least(FULL, TRIALS, 4, 0.0, 30.0) == 9
    assert late_at_least(FULL, TRIALS, 4, 0.0, 850.0) == 1  # only the trial at 100 s waits over 850 s
    assert late_at_least(FULL, TRIALS, 4, 0.0, 1000.0) == 0


def test_the_budget_lets_the_job_move_past_trials() -> None:
    """Budget 0.5 = a delay of 500 s on a 1,000 s job: start at 500, trials at 600..900 still caught."""
    assert late_at_least(FULL, TRIALS, 4, 0.5, 30.0) == 4
    assert late_at_least(FULL, TRIALS, 4, 0.9, 30.0) == 0  # start just as the last trial arrives
    assert late_at_least(FULL, TRIALS, 4, 1e9, 30.0) == 0


def test_only_jobs_too_wide_for_a_trial_beside_them_count() -> None:
    three = [Blocking(0.0, 1000.0, 3)]
    assert late_at_least(three, TRIALS, 4, 0.0, 30.0) == 0  # a 1-processor trial runs beside it
    assert late_at_least(three, [Arrival(t.at, 2) for t in TRIALS], 4, 0.0, 30.0) == 9
    assert late_at_least([Blocking(0.0, 1000.0, 2)], [Arrival(t.at, 4) for t in TRIALS], 4, 0.0, 30.0) == 0


def test_the_budget_is_what_the_slowdown_bound_leaves() -> None:
    jobs = [Blocking(0.0, 1000.0, 4), Blocking(0.0, 5.0, 1), Blocking(0.0, 100.0, 1)]
    # mean bsld <= 2: total 6, the two small jobs at least 1 each, the wide one 1 for its own run
    assert delay_budget(jobs, 4, 2.0) == pytest.approx(3.0)


def test_p95_floor_is_below_the_p95_of_the_forced_waits() -> None:
    floor = p95_lower_bound(FULL, TRIALS, 4, 0.0)
    assert 790.0 <= floor <= 876.0  # the waits are 900..100; interpolated p95 = 876
    assert p95_lower_bound(FULL, TRIALS, 4, 1e9) == 0.0
    b = trial_bound(FULL, TRIALS, 4, 0.0)
    assert (b.trials, b.blocking, b.late_30, b.late_30_share) == (9, 1, 9, 1.0)


def test_dodging_the_trials_needs_the_delay_past_the_last_caught_trial() -> None:
    """9 trials; p95 <= 30 s allows 1 late one. Start at 800: only the trial at 900 is caught (budget 0.8)."""
    assert dodge_budget(FULL, TRIALS, 4) == pytest.approx(0.8, rel=0.02)
    assert dodge_budget([Blocking(0.0, 1000.0, 3)], TRIALS, 4) == 0.0


def _mixed(seed: int) -> Workload:
    """32 processors; one job in six takes the whole machine; a dense stream of trials (90 % of jobs)."""
    jobs = [
        SimJob(f"h{i}", 900.0 * i, 600.0 + 97.0 * (i % 11), 4000.0, 32 if i % 6 == 0 else 1 + i % 9, f"u{i % 4}")
        for i in range(120)
    ]
    return overlay_agents(Workload("hpc", jobs, 0.0, None, "swf", Machine(32, 32)), Overlay(share=0.9), seed)


@pytest.mark.parametrize("spec", ["fcfs", "easy-textbook", "frontdesk"])
@pytest.mark.parametrize("seed", [1, 2])
def test_no_real_schedule_beats_the_bound(spec: str, seed: int) -> None:
    """Give the bound exactly the delay budget a simulated policy used: its trials must wait at least that much."""
    wl = _mixed(seed)
    recs = run(wl, spec).records
    hpc, trials = inputs(wl.jobs, 32)
    start = {r.job.id: r.start for r in recs}
    used = sum(
        (start[j.id] - j.submit) / max(min(j.runtime, j.walltime), 10.0)  # type: ignore[operator]
        for j in wl.jobs
        if not j.agent and 2 * j.cpus > 32
    )
    waits = sorted(r.start - r.submit for r in recs if r.job.agent)  # type: ignore[operator]
    for x in (0.0, 30.0, 300.0):
        forced = late_at_least(hpc, trials, 32, used + 1e-9, x)
        assert sum(w > x for w in waits) >= forced
    assert late_at_least(hpc, trials, 32, used, 30.0) > 0  # the bound says something on this workload
    floor = p95_lower_bound(hpc, trials, 32, used + 1e-9)
    assert waits[int((len(waits) - 1) * 0.95)] >= floor
