"""Preemption by suspension in the simulator (sim/suspend.py): hand-checked cases on a full machine, and a
property: suspension never loses or duplicates work, and never runs more cores than the machine has."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from frontdesk.policy.suspend import TURNAROUND, SuspendRules
from frontdesk.sim.cluster import assign_pools, build_cluster, default_policy
from frontdesk.sim.engine import JobRecord, simulate
from frontdesk.sim.metrics import bounded_slowdown
from frontdesk.sim.policies import FrontdeskPolicy
from frontdesk.sim.swf import Machine
from frontdesk.sim.workload import SimJob, Workload

MACHINE = Machine(8, 8, "hand")
DEFAULT = SuspendRules()


def _trial(id: str, submit: float, runtime: float, walltime: float, cpus: int = 1) -> SimJob:
    principal = f"agent-{id}"  # one principal each: every trial is granted
    return SimJob(
        id, submit, runtime, walltime, cpus, principal, group="agents", trial=True, template=f"{id}:t", agent=True
    )


def _run(jobs: list[SimJob], rules: SuspendRules | None = DEFAULT) -> dict[str, JobRecord]:
    wl = Workload("hand", jobs, 0.0, None, "swf", MACHINE)
    cfg = default_policy("swf", MACHINE)
    pol = FrontdeskPolicy(cfg, suspend=rules)
    res = simulate(wl, assign_pools(build_cluster("swf", MACHINE), cfg), pol)
    return {r.job.id: r for r in res.records}


HAND = [
    SimJob("big", 0.0, 10_000.0, 20_000.0, 6, "u1"),
    SimJob("med", 10.0, 5_000.0, 8_000.0, 2, "u2"),
    _trial("t1", 100.0, 120.0, 300.0),  # full machine: suspends med (the narrowest wide enough) until it ends
    _trial("t2", 105.0, 60.0, 240.0),  # ends (by its limit) within t1's: joins med's other core
    _trial("t3", 300.0, 30.0, 60.0),  # med resumed at 220 and must run 600 s first: big is suspended
    _trial("t4", 305.0, 100.0, 600.0),  # ends past t3's group; med rests, big is suspended: waits for 820
]


def test_a_full_machine_a_trial_suspends_the_narrowest_job_and_both_end_as_computed() -> None:
    r = _run(HAND)
    assert (r["t1"].start, r["t1"].end) == (100.0, 220.0)
    assert (r["t2"].start, r["t2"].end) == (105.0, 165.0)
    assert (r["t3"].start, r["t3"].end) == (300.0, 330.0)
    assert (r["t4"].start, r["t4"].end) == (820.0, 920.0)
    # med: suspended for t1 (and t2) 100-220, rested 600 s, suspended for t4 820-920; ends 220 s late
    assert r["med"].pauses == ((100.0, 220.0), (820.0, 920.0))
    assert (r["med"].start, r["med"].end) == (10.0, 5_230.0)
    assert r["big"].pauses == ((300.0, 330.0),)
    assert (r["big"].start, r["big"].end) == (0.0, 10_030.0)
    assert r["med"].preempted == 2 and r["big"].preempted == 1
    # the suspension counts as waiting: (wait 0 + suspended 220 + run 5,000) / 5,000
    assert abs(bounded_slowdown(r["med"]) - 5_220.0 / 5_000.0) < 1e-12
    assert all(not r[t].pauses for t in ("t1", "t2", "t3", "t4"))


def test_without_suspension_the_trials_wait_for_the_machine() -> None:
    r = _run(HAND, None)
    assert r["t1"].start == 5_010.0 and not r["med"].pauses and r["med"].end == 5_010.0


def test_a_job_is_suspended_at_most_its_share_of_its_requested_time() -> None:
    jobs = [SimJob("long", 0.0, 10_000.0, 10_000.0, 8, "u1"), _trial("t1", 100.0, 500.0, 600.0)]
    jobs += [_trial("t2", 2_000.0, 500.0, 600.0)]
    r = _run(jobs)  # 10 % of 10,000 s: the first 600 s suspension fits, a second one would not
    assert r["long"].pauses == ((100.0, 600.0),)
    assert r["t2"].start == r["long"].end == 10_500.0


WAITED = [
    SimJob("first", 0.0, 1_000.0, 1_000.0, 8, "u1"),
    SimJob("long", 0.0, 1_000.0, 1_000.0, 8, "u2"),  # waits 1,000 s behind first
    SimJob("short", 1_050.0, 100.0, 100.0, 3, "u3"),  # ends by the trial's limit: runs on long's idle cores
    SimJob("toolong", 1_060.0, 500.0, 500.0, 2, "u3"),  # would end past it: waits for long
    _trial("t1", 1_100.0, 150.0, 150.0),
    _trial("t2", 1_110.0, 100.0, 140.0, cpus=4),  # ends by 1,250: joins on the 4 cores kept for trials
]


def test_turnaround_a_job_that_waited_may_lend_its_cores_and_queued_jobs_fill_them() -> None:
    r = _run(WAITED, TURNAROUND)  # 10 % of long's 1,000 s wait + 1,000 s requested: 150 s fits
    assert r["long"].pauses == ((1_100.0, 1_250.0),)
    assert (r["long"].start, r["long"].end) == (1_000.0, 2_150.0)
    assert (r["t1"].start, r["t1"].end) == (1_100.0, 1_250.0)
    assert (r["t2"].start, r["t2"].end) == (1_110.0, 1_210.0)
    assert (r["short"].start, r["short"].end) == (1_100.0, 1_200.0)
    assert (r["toolong"].start, r["toolong"].end) == (2_150.0, 2_650.0)


def test_share_of_requested_time_only_a_job_that_waited_is_not_suspended() -> None:
    r = _run(WAITED)  # 10 % of 1,000 s requested: 100 s, under t1's 150 s; the trials wait for the machine
    assert not r["long"].pauses and r["long"].end == 2_000.0
    assert r["t1"].start == 2_000.0 and r["short"].start >= 2_000.0


EXTENDED = [
    SimJob("long", 0.0, 10_000.0, 10_000.0, 8, "u1"),
    _trial("t1", 100.0, 100.0, 200.0),  # suspends long until 300 at most
    _trial("t2", 150.0, 100.0, 300.0),  # its limit ends at 450, past the group's 300
]


def test_extend_a_trial_joins_a_group_past_its_end_and_the_victim_rests_after() -> None:
    r = _run(EXTENDED, SuspendRules(extend=True))  # the group lasts to 450 at most (350 s of long's 1,000 s)
    assert (r["t2"].start, r["t2"].end) == (150.0, 250.0)
    assert r["long"].pauses == ((100.0, 250.0),) and r["long"].end == 10_150.0
    r = _run(EXTENDED)  # no join past the group: long resumes at 200 and rests 600 s before t2 may suspend it
    assert (r["t2"].start, r["t2"].end) == (800.0, 900.0)
    assert r["long"].pauses == ((100.0, 200.0), (800.0, 900.0)) and r["long"].end == 10_200.0


def _executing(recs: dict[str, JobRecord]) -> list[tuple[float, int]]:
    """(time, +cores / -cores) whenever a job starts, pauses, resumes or ends."""
    out: list[tuple[float, int]] = []
    for r in recs.values():
        assert r.start is not None and r.end is not None
        edges = [r.start, *(t for p in r.pauses for t in p), r.end]
        for a, b in zip(edges[::2], edges[1::2], strict=True):
            if b > a:  # a job suspended as it starts runs no time before its pause
                out += [(a, r.job.cpus), (b, -r.job.cpus)]
    return sorted(out, key=lambda e: (e[0], e[1]))  # ends before starts at the same instant


_hpc = st.builds(
    lambda k, submit, run, slack, cpus: SimJob(f"h{k}", submit, run, run * slack, cpus, f"u{k % 3}"),
    st.integers(0, 10**6),
    st.floats(0, 3_000).map(round),
    st.floats(1, 20_000).map(round),
    st.floats(1, 4),
    st.integers(1, 8),
)
_trials = st.builds(
    lambda k, submit, run, limit, cpus: _trial(f"t{k}", submit, min(run, limit), limit, cpus),
    st.integers(0, 10**6),
    st.floats(0, 5_000).map(round),
    st.floats(1, 600).map(round),
    st.sampled_from([60.0, 120.0, 300.0, 600.0]),
    st.integers(1, 4),
)
_rules = st.builds(
    SuspendRules,
    trial_limit_s=st.sampled_from([300.0, 600.0]),
    max_share=st.sampled_from([0.05, 0.1, 0.5, 1.0]),
    rest_s=st.sampled_from([0.0, 60.0, 600.0]),
    grace_s=st.sampled_from([0.0, 15.0]),
    count_wait=st.booleans(),
    extend=st.booleans(),
    fill=st.booleans(),
    keep_for_trials=st.sampled_from([0.0, 4.0]),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_hpc, min_size=1, max_size=10), st.lists(_trials, max_size=12), _rules)
def test_suspension_never_loses_or_duplicates_work(
    hpc: list[SimJob], trials: list[SimJob], rules: SuspendRules
) -> None:
    jobs = {j.id: j for j in hpc + trials}  # ids unique
    ordered = sorted(jobs.values(), key=lambda j: j.submit)
    recs = _run(ordered, rules)
    assert set(recs) == set(jobs), "every job is recorded once"
    for r in recs.values():
        assert r.start is not None and r.end is not None, f"{r.job.id} never ran to its end"
        work = min(r.job.runtime, r.job.walltime)
        assert abs((r.end - r.start - r.suspended) - work) < 1e-6, f"{r.job.id}: ran {r.end - r.start - r.suspended}"
        edges = [r.start, *(t for p in r.pauses for t in p), r.end]
        assert edges == sorted(edges), f"{r.job.id}: pauses outside its run or overlapping: {r.pauses}"
        if r.pauses:
            assert not r.job.trial or not r.trial, "a granted trial is never suspended"
            waited = r.start - r.submit if rules.count_wait else 0.0
            assert r.suspended <= rules.max_share * (r.job.walltime + waited) + 1e-6
            gaps = [b[0] - a[1] for a, b in zip(r.pauses, r.pauses[1:], strict=False)]
            assert all(g >= rules.rest_s for g in gaps), f"{r.job.id} suspended again after {gaps}"
    busy = 0
    for _, delta in _executing(recs):
        busy += delta
        assert 0 <= busy <= MACHINE.procs, "more cores executing than the machine has"


def test_without_trials_suspension_changes_nothing() -> None:
    jobs = [SimJob(f"h{i}", 7.0 * i, 100.0 + 37 * i, 400.0 + 90 * i, 1 + i % 8, f"u{i % 3}") for i in range(60)]
    on, off = _run(jobs), _run(jobs, None)
    assert [(r.start, r.end) for r in on.values()] == [(r.start, r.end) for r in off.values()]
    assert not any(r.pauses for r in on.values())
