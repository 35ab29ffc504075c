"""The pure choice of jobs a blocked trial suspends (policy/suspend.py), checked by hand."""

from __future__ import annotations

import pytest

from frontdesk.policy.model import JobView, Part
from frontdesk.policy.suspend import (
    TURNAROUND,
    SuspendRules,
    Victim,
    choose_victims,
    eligible_trial,
    fills,
    lend_parts,
    may_suspend,
)

RULES = SuspendRules()


def _v(id: str, cpus: int, started: float, walltime: float = 36_000.0, **kw: object) -> Victim:
    parts = tuple(Part(f"{id}-n{i}", 1.0, 0, 0) for i in range(cpus))
    return Victim(id, "all", parts, started, walltime, **kw)  # type: ignore[arg-type]


def test_one_wide_enough_job_the_narrowest_then_the_latest_started() -> None:
    running = [_v("wide", 64, 0.0), _v("a", 4, 10.0), _v("b", 4, 50.0), _v("small", 1, 90.0)]
    assert [v.id for v in choose_victims(2, "all", 300, running, RULES, 100.0)] == ["b"]


def test_no_single_job_is_wide_enough_the_widest_first() -> None:
    running = [_v("a", 1, 10.0), _v("b", 2, 20.0), _v("c", 1, 30.0), _v("d", 2, 40.0)]
    assert [v.id for v in choose_victims(4, "all", 300, running, RULES, 100.0)] == ["d", "b"]
    assert [v.id for v in choose_victims(5, "all", 300, running, RULES, 100.0)] == ["d", "b", "c"]
    assert choose_victims(7, "all", 300, running, RULES, 100.0) == []


@pytest.mark.parametrize(
    ("victim", "why"),
    [
        (_v("t", 8, 0.0, trial=True), "a trial is never suspended"),
        (_v("x", 8, 0.0, exclusive=True), "an exclusive placement is not"),
        (Victim("p", "gpu", (Part("g", 8.0, 0, 0),), 0.0, 36_000.0), "another pool's job is not"),
        (_v("short", 8, 0.0, walltime=2_999.0), "300 s is over 10 % of 2,999 s"),
        (_v("spent", 8, 0.0, suspended_s=3_400.0), "3,400 + 300 s is over 10 % of 36,000 s"),
        (_v("rested", 8, 0.0, resumed_at=500.0), "resumed 500 s ago: under rest_s (600 s)"),
    ],
)
def test_who_may_not_be_suspended(victim: Victim, why: str) -> None:
    assert not may_suspend(victim, "all", 300.0, RULES, 1_000.0), why
    assert choose_victims(1, "all", 300.0, [victim], RULES, 1_000.0) == [], why


def test_who_may_be_suspended_at_the_limits() -> None:
    assert may_suspend(_v("edge", 8, 0.0, walltime=3_000.0), "all", 300.0, RULES, 1_000.0)
    assert may_suspend(_v("rested", 8, 0.0, suspended_s=3_300.0, resumed_at=400.0), "all", 300.0, RULES, 1_000.0)


def test_lend_parts_takes_whole_cores_node_by_node() -> None:
    lendable = [Part("n1", 2.0, 0, 0), Part("n2", 8.0, 0, 0)]
    assert lend_parts(3, lendable) == (Part("n1", 2.0, 0, 0), Part("n2", 1.0, 0, 0))
    assert lend_parts(10, lendable) == (Part("n1", 2.0, 0, 0), Part("n2", 8.0, 0, 0))
    assert lend_parts(11, lendable) is None


def test_eligible_trial() -> None:
    trial = JobView("t", "a", "agent", "all", cpus=2, walltime_s=600.0, queued_at=100.0, trial=True)
    assert eligible_trial(trial, RULES, 100.0)
    assert not eligible_trial(JobView("h", "u", "hpc", "all", walltime_s=60.0, queued_at=100.0), RULES, 100.0)
    assert not eligible_trial(JobView("g", "a", "agent", "all", gpus=1, walltime_s=60.0, trial=True), RULES, 100.0), (
        "a GPU trial does not suspend (cores only)"
    )
    assert not eligible_trial(JobView("l", "a", "agent", "all", walltime_s=601.0, trial=True), RULES, 100.0), (
        "over the time limit"
    )
    graced = SuspendRules(grace_s=20.0)
    assert not eligible_trial(trial, graced, 119.0)
    assert eligible_trial(trial, graced, 120.0)


def test_rules_out_of_range_are_refused() -> None:
    with pytest.raises(ValueError, match="suspend rules"):
        SuspendRules(max_share=1.5)
    with pytest.raises(ValueError, match="suspend rules"):
        SuspendRules(keep_for_trials=-1.0)


def test_count_wait_the_share_is_of_the_expected_turnaround() -> None:
    waited = _v("w", 8, 1_000.0, walltime=1_000.0, waited_s=2_000.0)
    assert not may_suspend(waited, "all", 150.0, RULES, 1_100.0), "150 s is over 10 % of 1,000 s requested"
    assert may_suspend(waited, "all", 300.0, TURNAROUND, 1_100.0), "300 s is 10 % of 2,000 s waited + 1,000 s"
    assert not may_suspend(waited, "all", 301.0, TURNAROUND, 1_100.0)
    spent = _v("s", 8, 1_000.0, walltime=1_000.0, waited_s=2_000.0, suspended_s=200.0, resumed_at=1_000.0)
    assert may_suspend(spent, "all", 100.0, TURNAROUND, 1_060.0), "60 s of rest under TURNAROUND"
    assert not may_suspend(spent, "all", 100.0, TURNAROUND, 1_059.0)
    assert not may_suspend(spent, "all", 101.0, TURNAROUND, 1_100.0)


def _q(id: str, cpus: int, walltime: float, pool: str = "all", gpus: int = 0) -> JobView:
    return JobView(id, "u", "hpc", pool, cpus=cpus, gpus=gpus, walltime_s=walltime)


def test_fills_first_come_what_fits_the_idle_cores_and_ends_in_time() -> None:
    queued = [
        _q("late", 1, 301.0),  # ends past the group's end (now 100 + 301 > 400)
        _q("gpu", 1, 60.0, gpus=1),
        _q("other", 1, 60.0, pool="gpu"),
        _q("a", 3, 300.0),
        _q("wide", 4, 60.0),  # 10 idle cores, 4 kept for trials, 3 taken by a: 3 left
        _q("b", 2, 60.0),
        _q("c", 2, 60.0),  # 1 core left after b
    ]
    assert [v.id for v in fills(queued, "all", 10.0, 400.0, TURNAROUND, 100.0)] == ["a", "b"]
    assert fills(queued, "all", 10.0, 400.0, RULES, 100.0) == [], "without fill nothing runs on lent cores"
    assert fills(queued, "all", 4.0, 400.0, TURNAROUND, 100.0) == [], "the 4 kept for trials"
