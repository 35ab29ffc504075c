"""The trial privilege: fast start within a budget, lost for a cool-down by those who game it."""

from __future__ import annotations

from frontdesk.policy.config import TrialConfig
from frontdesk.policy.trial import TrialLedger

GiB = 1024**3


def ledger(**kw: object) -> TrialLedger:
    return TrialLedger(TrialConfig(**kw))  # type: ignore[arg-type]


def test_granted_within_budget() -> None:
    v = ledger().request("alice", "pytest -x", 2, 0, GiB, 300, now=0)
    assert v.granted and v.revocation is None


def test_over_budget_is_not_a_trial() -> None:
    led = ledger()
    for args, word in (
        ((16, 0, GiB, 300), "cpus"),
        ((2, 4, GiB, 300), "gpus"),
        ((2, 0, GiB, 3600), "walltime"),
        ((2, 0, GiB, None), "walltime"),
        ((2, 0, 64 * GiB, 300), "memory"),
    ):
        v = led.request("alice", "t", *args, now=0)  # type: ignore[arg-type]
        assert not v.granted and word in v.reason


def test_trials_running_to_the_cap_lose_the_privilege() -> None:
    led = ledger(cap_hits=3, cooldown=3600)
    revs = []
    t = 0.0
    for i in range(3):
        assert led.request("gamer", f"job{i}", 4, 1, GiB, 600, now=t).granted
        t += 600
        revs.append(led.ended("gamer", f"job{i}", 600, 600, now=t))
    assert revs[:2] == [None, None] and revs[2] is not None
    assert "3 trials ran to the 10m00s cap" in revs[2].reason and revs[2].until == t + 3600
    v = led.request("gamer", "job9", 1, 0, GiB, 60, now=t + 10)
    assert not v.granted and "revoked" in v.reason
    assert led.request("gamer", "job9", 1, 0, GiB, 60, now=t + 3601).granted  # the cool-down ends
    assert led.request("honest", "x", 1, 0, GiB, 60, now=t + 10).granted


def test_chained_checkpoint_resubmissions_lose_the_privilege() -> None:
    led = ledger(cap_hits=100, chain_length=3, chain_gap=120)
    t = 0.0
    verdicts = []
    for _ in range(4):
        verdicts.append(led.request("chain", "python train.py --resume ckpt", 4, 1, GiB, 600, now=t))
        if not verdicts[-1].granted:
            break
        t += 600
        led.ended("chain", "python train.py --resume ckpt", 600, 600, now=t)
        t += 5
    assert [v.granted for v in verdicts] == [True, True, False]
    assert verdicts[-1].revocation is not None and "chained resubmissions" in verdicts[-1].reason


def test_short_trials_do_not_chain() -> None:
    led = ledger(chain_length=2)
    for i in range(10):
        assert led.request("fast", "pytest", 1, 0, GiB, 600, now=i * 70.0).granted
        assert led.ended("fast", "pytest", 30, 600, now=i * 70.0 + 30) is None


def test_exceeding_the_rate_loses_the_privilege() -> None:
    led = ledger(rate=5, rate_window=60)
    verdicts = [led.request("burst", f"t{i}", 1, 0, GiB, 60, now=float(i)) for i in range(6)]
    assert all(v.granted for v in verdicts[:5])
    assert not verdicts[5].granted and verdicts[5].revocation is not None
    assert "more than 5 trials in 1m00s" in verdicts[5].revocation.reason
    assert led.request("calm", "t", 1, 0, GiB, 60, now=5).granted
