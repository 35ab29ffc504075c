"""The simulator's speed-ups answer exactly what the plain code answers: a pass's ranking function against
`priority.rank`, signature look-ups that ignore the GPU need of a job asking no GPU, and passes planned on the
simulator's own nodes (in place) against passes planned on a copy."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from frontdesk.policy.config import PriorityConfig, TimeWeight
from frontdesk.policy.model import JobView, apply
from frontdesk.policy.priority import FairshareLedger, rank, ranker
from frontdesk.policy.shapes import IndexedNodes
from frontdesk.sim.cluster import assign_pools, build_cluster, default_policy
from frontdesk.sim.compare import make_policy
from frontdesk.sim.engine import simulate
from frontdesk.sim.overlay import overlay_agents
from frontdesk.sim.swf import Machine
from frontdesk.sim.workload import SimJob, Workload
from frontdesk.spec.accelerators import GpuNeed

job_st = st.builds(
    JobView,
    id=st.sampled_from(["a", "b", "c"]),
    principal=st.sampled_from(["p1", "p2", "p3", "new"]),
    job_class=st.sampled_from(["agent", "hpc", "training", "interactive"]),
    pool=st.just("all"),
    queued_at=st.floats(0, 50_000),
    group=st.sampled_from(["", "lab-a", "lab-b"]),
    trial=st.booleans(),
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(job_st, min_size=1, max_size=30),
    st.lists(
        st.tuples(st.sampled_from(["p1", "p2", "p3"]), st.sampled_from(["", "lab-a"]), st.floats(1, 1e5)), max_size=6
    ),
    st.floats(0, 100_000),
    st.floats(0, 23.99),
    st.booleans(),
    st.booleans(),
)
def test_ranker_is_rank(
    jobs: list[JobView],
    charges: list[tuple[str, str, float]],
    now: float,
    hour: float,
    weighted: bool,
    with_shares: bool,
) -> None:
    cfg = PriorityConfig(time_weights=[TimeWeight(classes=["training"], start_hour=22, end_hour=6, weight=2.5)])
    if not weighted:
        cfg = PriorityConfig()
    ledger = FairshareLedger(3600.0)
    for principal, group, seconds in charges:
        ledger.charge(principal, group, 4, 1, seconds, now=seconds)
    snap = ledger.snapshot(now, cfg.principal_weight) if with_shares else None
    key = ranker(now, hour, cfg, snap)
    assert [key(j) for j in jobs] == [rank(j, now, hour, cfg, snap) for j in jobs]


def test_a_job_asking_no_gpu_has_one_signature_whatever_its_gpu_need() -> None:
    from frontdesk.policy.config import PolicyConfig
    from frontdesk.policy.scheduler import PoolPlacer
    from frontdesk.sim.policies import _FlatPlacer

    plain = JobView("a", "u", "hpc", "hpc", 4)
    typed = JobView("b", "u", "hpc", "hpc", 4, gpu=GpuNeed(types=("H100",)))
    asking = JobView("c", "u", "hpc", "hpc", 4, gpus=1, gpu=GpuNeed(types=("H100",)))
    flat = _FlatPlacer({})
    pools = PoolPlacer(PolicyConfig(), {}, 12.0)
    for placer in (flat, pools):
        assert placer.signature(plain) == placer.signature(typed)
        assert placer.signature(asking) != placer.signature(JobView("d", "u", "hpc", "hpc", 4, gpus=1))


class _PlannedOnACopy:
    """The policy, its passes planned on a copy of the nodes and applied after (the engine before in-place
    passes): the in-place pass must decide the same."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def schedule(self, queue: Any, nodes: Any, running: Any, now: float, hour: float, in_place: bool = False) -> Any:
        got = self.inner.schedule(queue, nodes, running, now, hour)
        for p in got:
            if isinstance(nodes, IndexedNodes):
                nodes.apply(p.parts, p.exclusive, 1)
            else:
                apply(nodes, p.parts, p.exclusive, 1)
        return got


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0, 500), st.sampled_from([1, 1, 2, 3, 8, 16]), st.floats(1, 400), st.floats(1, 3)),
        min_size=1,
        max_size=50,
    ),
    st.sampled_from([(16, 16), (24, 3)]),
    st.booleans(),
    st.booleans(),
)
def test_a_pass_in_place_decides_as_one_on_a_copy(
    jobs: list[tuple[float, int, float, float]], machine: tuple[int, int], agents: bool, indexed: bool
) -> None:
    procs, count = machine
    sims = [
        SimJob(f"j{k}", t, run, run * over, min(p, procs), f"u{k % 3}")
        for k, (t, p, run, over) in enumerate(sorted(jobs))
    ]
    wl = Workload("h", sims, 0.0, None, "swf", Machine(procs, count))
    if agents:
        wl = overlay_agents(wl)
    for spec in ("fifo", "easy", "frontdesk", "frontdesk-suspend"):
        got = []
        for wrap in (False, True):
            pol = make_policy(spec, wl)
            cfg = getattr(pol, "cfg", None) or default_policy(wl.cluster, wl.machine)
            nodes = assign_pools(build_cluster(wl.cluster, wl.machine), cfg)
            res = simulate(wl, nodes, _PlannedOnACopy(pol) if wrap else pol, indexed=indexed)
            got.append(sorted((r.job.id, r.start, r.end, r.preempted, r.pauses) for r in res.records))
        assert got[0] == got[1], spec
