"""Agent work beside hpc jobs in one pool: EASY's head chain, the bounded agent lane and the agent slice.

Hand-checked cases on one-core nodes, and a hypothesis test that no pass breaks the reservation or the slice.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frontdesk.errors import ConfigError
from frontdesk.policy.config import PolicyConfig, parse_policy
from frontdesk.policy.model import JobView, NodeView, Part, RunningView, apply
from frontdesk.policy.scheduler import plan


def shared(**pool: Any) -> PolicyConfig:
    """One pool over the whole machine that takes every class, with `pool`'s extra fields."""
    return parse_policy({"pools": [{"name": "all", "allocation": "spread", **pool}]})


def machine(n: int, busy: int, until: float, trial: bool = False) -> tuple[dict[str, NodeView], list[RunningView]]:
    """`n` one-core nodes; the first `busy` run one job (a trial if `trial`) until `until`."""
    nodes = {f"n{i}": NodeView(f"n{i}", "all", 1, 0) for i in range(n)}
    parts = tuple(Part(f"n{i}", 1.0, 0, 0) for i in range(busy))
    apply(nodes, parts, False)
    cls = "agent" if trial else "hpc"
    return nodes, ([RunningView("R", parts, until, False, cls, trial)] if busy else [])


def hpc(job_id: str, cpus: int, wall: float, at: float) -> JobView:
    return JobView(job_id, "phys", "hpc", "all", cpus, 0, 0, wall, at)


def trial(job_id: str, wall: float, at: float, cpus: int = 1) -> JobView:
    return JobView(job_id, "agent01", "agent", "all", cpus, 0, 0, wall, at, trial=True)


def run(cfg: PolicyConfig, queue: list[JobView], nodes: dict[str, NodeView], running: list[RunningView]) -> Any:
    starts, res = plan(queue, nodes, running, now=10.0, hour=12, cfg=cfg)
    return {p.job_id for p in starts}, res


def test_after_the_head_starts_the_next_oldest_holds_the_reservation() -> None:
    """4 one-core nodes, 2 busy until 100. A (1 core, oldest) starts; B (3 cores, next oldest) is then EASY's
    head: its reservation is 3 nodes at 100 and the free node left is one of them. The trial T (10 min) ranks
    above B in the MLFQ but would hold that node until 610: it waits. (Before the head chain, the reservation
    went to the first blocked job in MLFQ order after T had taken the node, and B's start moved to 610.)"""
    nodes, running = machine(4, 2, 100.0)
    started, res = run(shared(), [hpc("A", 1, 3600, 0.0), hpc("B", 3, 3600, 1.0), trial("T", 600, 5.0)], nodes, running)
    assert started == {"A"}
    assert res["all"].job_id == "B" and res["all"].shadow == 100.0


LANE = {"agent_max_cores": 2, "agent_lane_after": 5}


def test_the_agent_lane_bounds_the_cores_agent_work_holds_while_batch_jobs_wait() -> None:
    """8 free nodes, a lane of 2 cores that binds once a batch job has waited 5 s: H (queued at 3, now 10)
    has; of three one-core trials two start, the third waits; H itself is not bounded by the lane."""
    nodes, running = machine(8, 0, 0.0)
    queue = [trial("T1", 60, 0.0), trial("T2", 60, 1.0), trial("T3", 60, 2.0), hpc("H", 4, 600, 3.0)]
    started, _ = run(shared(**LANE), queue, nodes, running)
    assert started == {"T1", "T2", "H"}


def test_the_lane_does_not_bind_in_a_pool_that_is_not_congested() -> None:
    """The same, but H was queued at 8 (waited 2 s < 5 s): all three trials start."""
    nodes, running = machine(8, 0, 0.0)
    queue = [trial("T1", 60, 0.0), trial("T2", 60, 1.0), trial("T3", 60, 2.0), hpc("H", 4, 600, 8.0)]
    started, _ = run(shared(**LANE), queue, nodes, running)
    assert started == {"T1", "T2", "T3", "H"}


def test_running_agent_work_counts_against_the_lane() -> None:
    nodes, running = machine(8, 2, 500.0, trial=True)
    started, _ = run(shared(**LANE), [trial("T", 60, 0.0), hpc("H", 8, 600, 0.0)], nodes, running)
    assert started == set()


def test_a_trial_held_back_by_the_lane_does_not_take_the_reservation() -> None:
    """T (oldest) waits for the lane, not for cores: H (4 cores, next oldest) starts on the free nodes."""
    nodes, running = machine(8, 2, 500.0, trial=True)
    started, _ = run(shared(**LANE), [trial("T", 60, 0.0), hpc("H", 4, 600, 1.0)], nodes, running)
    assert started == {"H"}


def test_a_trial_wider_than_the_lane_runs_alone() -> None:
    nodes, running = machine(8, 0, 0.0)
    queue = [trial("T", 60, 0.0, cpus=4), trial("U", 60, 1.0), hpc("H", 8, 600, 0.5)]
    started, _ = run(shared(**LANE), queue, nodes, running)
    assert started == {"T"}


def test_batch_jobs_leave_the_agent_slice_free() -> None:
    """8 free nodes, a slice of 2: H (6 cores) starts and leaves 2 free; K (1 core) would leave 1: it waits;
    the trial T starts in the slice."""
    nodes, running = machine(8, 0, 0.0)
    queue = [hpc("H", 6, 3600, 0.0), hpc("K", 1, 3600, 1.0), trial("T", 600, 2.0)]
    started, _ = run(shared(agent_cores=2), queue, nodes, running)
    assert started == {"H", "T"}


def test_cores_agent_work_holds_count_as_the_slice() -> None:
    """Agent work already holds the 2 slice cores: a batch job may take every other free core."""
    nodes, running = machine(8, 2, 500.0, trial=True)
    started, _ = run(shared(agent_cores=2), [hpc("K", 6, 3600, 0.0)], nodes, running)
    assert started == {"K"}


def test_a_job_wider_than_the_pool_less_the_slice_may_still_use_it() -> None:
    """A slice never makes a wide job unrunnable: H (7 of 8 cores) leaves the 1 core it can."""
    nodes, running = machine(8, 0, 0.0)
    started, _ = run(shared(agent_cores=2), [hpc("H", 7, 3600, 0.0)], nodes, running)
    assert started == {"H"}


@pytest.mark.parametrize(("slice_cores", "expected"), [(0, set()), (2, {"T"})])
def test_a_trial_arriving_later_finds_the_slice_free(slice_cores: int, expected: set[str]) -> None:
    """8 one-core nodes, 6 busy until 300; H (6 cores) waits for them. Two long one-core hpc jobs K1, K2 could
    take the 2 free nodes (H does not need them). Without a slice they do, and a trial T arriving next waits
    until 300 at best; with a slice of 2 they wait (H, with the slice, reserves all 8 nodes at 300), and T
    starts at once on a slice core. H keeps its reservation at 300 either way."""
    nodes, running = machine(8, 6, 300.0)
    queue = [hpc("H", 6, 3600, 0.0), hpc("K1", 1, 3600, 1.0), hpc("K2", 1, 3600, 2.0)]
    cfg = shared(agent_cores=slice_cores)
    first, _ = plan(queue, nodes, running, now=10.0, hour=12, cfg=cfg)
    assert {p.job_id for p in first} == ({"K1", "K2"} if slice_cores == 0 else set())
    for p in first:
        apply(nodes, p.parts, False)
        running.append(RunningView(p.job_id, p.parts, 10.0 + 3600, False, "hpc"))
    later = [j for j in queue if j.id not in {p.job_id for p in first}] + [trial("T", 600, 20.0)]
    starts, res = plan(later, nodes, running, now=20.0, hour=12, cfg=cfg)
    assert {p.job_id for p in starts} == expected
    assert res["all"].job_id == "H" and res["all"].shadow == 300.0


def test_the_slice_fields_are_validated() -> None:
    with pytest.raises(ConfigError, match="agent_cores"):
        shared(agent_cores=-1)
    with pytest.raises(ConfigError, match="agent_max_cores"):
        shared(agent_max_cores=0)
    with pytest.raises(ConfigError, match="agent_fill"):
        shared(agent_fill=1.5)


queues = st.lists(
    st.tuples(st.booleans(), st.integers(1, 6), st.integers(1, 40).map(lambda m: 60.0 * m), st.integers(0, 9)),
    min_size=1,
    max_size=12,
)
running_jobs = st.lists(
    st.tuples(st.booleans(), st.integers(1, 4), st.integers(1, 50).map(lambda m: 60.0 * m)), max_size=5
)


@settings(max_examples=150, deadline=None)
@given(queues, running_jobs, st.integers(0, 6), st.sampled_from([None, 1, 3]))
def test_no_pass_breaks_the_reservation_or_the_slice(
    specs: list[tuple[bool, int, float, int]],
    runs: list[tuple[bool, int, float]],
    slice_cores: int,
    lane: int | None,
) -> None:
    total = 16
    nodes = {f"n{i}": NodeView(f"n{i}", "all", 1, 0) for i in range(total)}
    running: list[RunningView] = []
    for k, (is_trial, width, end) in enumerate(runs):
        free = [n for n in nodes if nodes[n].free_cpus >= 1][:width]
        if len(free) < width:
            break
        parts = tuple(Part(n, 1.0, 0, 0) for n in free)
        apply(nodes, parts, False)
        running.append(RunningView(f"R{k}", parts, 10.0 + end, False, "agent" if is_trial else "hpc", is_trial))
    queue = [
        trial(f"J{i}", wall, float(at), min(w, 4)) if is_trial else hpc(f"J{i}", w, wall, float(at))
        for i, (is_trial, w, wall, at) in enumerate(specs)
    ]
    cfg = shared(agent_cores=slice_cores, **({"agent_max_cores": lane, "agent_lane_after": 0} if lane else {}))
    starts, res = plan(queue, nodes, running, now=10.0, hour=12, cfg=cfg)
    by_id = {j.id: j for j in queue}
    free = sum(n.free_cpus for n in nodes.values()) - sum(x.cpus for p in starts for x in p.parts)
    agent_held = sum(x.cpus for r in running if r.trial for x in r.parts)
    agent_held += sum(x.cpus for p in starts if by_id[p.job_id].trial for x in p.parts)
    assert free >= -1e-9
    batch = [by_id[p.job_id] for p in starts if not by_id[p.job_id].trial]
    if batch:  # the last batch job started left the slice (less what agent work holds) free
        assert free + agent_held >= min(slice_cores, total - batch[-1].cpus) - 1e-9
    if lane and any(not j.trial for j in queue):
        before = sum(x.cpus for r in running if r.trial for x in r.parts)
        alone = max((by_id[p.job_id].cpus for p in starts if by_id[p.job_id].trial), default=0)
        assert agent_held <= max(lane, before, alone)  # a trial wider than the lane runs alone
    ends = [(x, r.expected_end) for r in running for x in r.parts]
    ends += [(x, 10.0 + by_id[p.job_id].walltime_s) for p in starts for x in p.parts]
    for r in res.values():  # the head still gets its cores at its shadow time
        mine = set(nodes) if r.extra is not None else r.nodes  # a processor count: all the pool's cores
        held = sum(x.cpus for x, end in ends if x.node in mine and end > r.shadow)
        assert len(mine) - held >= by_id[r.job_id].cpus, (r, starts)
