"""The simulator's speed-ups answer exactly what the plain code answers: a pass's ranking function against
`priority.rank`, and signature look-ups that ignore the GPU need of a job asking no GPU."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from frontdesk.policy.config import PriorityConfig, TimeWeight
from frontdesk.policy.model import JobView
from frontdesk.policy.priority import FairshareLedger, rank, ranker
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
