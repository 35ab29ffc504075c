"""MLFQ levels, fairshare per principal and group, time-of-day weights."""

from __future__ import annotations

from frontdesk.policy.config import PriorityConfig, TimeWeight
from frontdesk.policy.model import JobView
from frontdesk.policy.priority import FairshareLedger, level, rank, slurm_priority, time_weight

CFG = PriorityConfig()


def test_agent_and_trial_enter_high_and_drop_after_30s() -> None:
    assert level("agent", False, 0, CFG) == 3
    assert level("agent", False, 29.9, CFG) == 3
    assert level("agent", False, 30, CFG) == 2
    assert level("agent", True, 0, CFG) == 4
    assert level("agent", True, 31, CFG) == 3


def test_training_ages_up_one_level_per_10_minutes() -> None:
    assert [level("training", False, t, CFG) for t in (0, 599, 600, 1200, 99999)] == [1, 1, 2, 3, 3]


def test_hpc_enters_low() -> None:
    assert level("hpc", False, 0, CFG) == 0
    assert level("hpc", False, 0, CFG) < level("training", False, 0, CFG) < level("agent", False, 0, CFG)


def test_fairshare_puts_a_heavy_principal_and_its_group_behind() -> None:
    shares = FairshareLedger(half_life=3600)
    shares.charge("campaign", "lab-a", 4, 1, 36000, now=0)
    shares.charge("quiet", "lab-b", 1, 0, 60, now=0)
    snap = shares.snapshot(100, principal_weight=0.7)
    assert snap.factor("campaign", "lab-a") < snap.factor("quiet", "lab-b") < 1.0
    assert snap.factor("newcomer", "lab-b") > snap.factor("newcomer", "lab-a")
    jobs = [
        JobView("1", "campaign", "agent", "agent", queued_at=0, group="lab-a"),
        JobView("2", "quiet", "agent", "agent", queued_at=5, group="lab-b"),
    ]
    ordered = sorted(jobs, key=lambda j: rank(j, 10, 12, CFG, snap))
    assert [j.id for j in ordered] == ["2", "1"]


def test_fairshare_decays_with_half_life() -> None:
    shares = FairshareLedger(half_life=100)
    shares.charge("a", "", 1, 0, 1000, now=0)
    shares.charge("b", "", 1, 0, 1000, now=1000)
    snap = shares.snapshot(1000, 1.0)
    assert snap.factor("a", "") > snap.factor("b", "")


def test_time_of_day_weights_wrap_midnight() -> None:
    cfg = PriorityConfig(time_weights=[TimeWeight(start_hour=22, end_hour=6, classes=["training"], weight=2.0)])
    assert time_weight("training", 23.5, cfg) == 2.0
    assert time_weight("training", 3, cfg) == 2.0
    assert time_weight("training", 12, cfg) == 1.0
    assert time_weight("agent", 23.5, cfg) == 1.0


def test_slurm_priority_orders_levels_first() -> None:
    assert slurm_priority("agent", True, 0.1, CFG) > slurm_priority("agent", False, 1.0, CFG)
    assert slurm_priority("agent", False, 0.1, CFG) > slurm_priority("hpc", False, 1.0, CFG)


def test_slurm_nice_keeps_the_order_and_is_never_negative() -> None:
    from frontdesk.policy.priority import slurm_nice

    trial = slurm_priority("agent", True, 1.0, CFG)
    hpc = slurm_priority("hpc", False, 0.0, CFG)
    assert 0 <= slurm_nice(trial) < slurm_nice(hpc)


def test_a_snapshot_keeps_the_use_of_its_time_when_read_after_a_charge() -> None:
    """Factors are worked out when first read: a charge between the snapshot and that read must not reach it."""
    shares, alone = FairshareLedger(half_life=3600), FairshareLedger(half_life=3600)
    for ledger in (shares, alone):
        ledger.charge("a", "lab-a", 4, 0, 600, now=0)
        ledger.charge("b", "lab-b", 1, 0, 60, now=0)
    snap = shares.snapshot(100, principal_weight=0.7)
    shares.charge("b", "lab-b", 64, 8, 36_000, now=50)  # after the snapshot, before it is read
    want = alone.snapshot(100, principal_weight=0.7)
    for principal, group in (("a", "lab-a"), ("b", "lab-b"), ("new", "lab-b")):
        assert snap.factor(principal, group) == want.factor(principal, group)
    assert shares.snapshot(100, 0.7).factor("b", "lab-b") < want.factor("b", "lab-b")
