"""What the simulator reports: per-class waits, bounded slowdown, utilisation, trial turnaround, fairness."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from frontdesk.sim.engine import JobRecord, SimResult

__all__ = ["bounded_slowdown", "jain", "percentile", "summarize"]

BSLD_TAU = 10.0


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0–100) by linear interpolation; 0 for no values."""
    if not values:
        return 0.0
    s = sorted(values)
    k = (len(s) - 1) * q / 100
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def bounded_slowdown(r: JobRecord) -> float:
    """max(1, (wait + suspended + run) / max(run, 10 s)): time suspended counts as waiting, not running."""
    assert r.start is not None and r.end is not None
    if r.pauses:
        run = r.end - r.start - r.suspended
        return max(1.0, (r.end - r.submit) / max(run, BSLD_TAU))
    run = r.end - r.start
    return max(1.0, (r.start - r.submit + run) / max(run, BSLD_TAU))


def jain(values: Sequence[float]) -> float:
    """Jain's fairness index: 1 when all equal, 1/n when one takes all."""
    if not values:
        return 1.0
    total = sum(values)
    sq = sum(v * v for v in values)
    return 1.0 if sq == 0 else total * total / (len(values) * sq)


def _stats(values: list[float]) -> dict[str, float]:
    return {
        "mean": sum(values) / len(values) if values else 0.0,
        "p50": percentile(values, 50),
        "p95": percentile(values, 95),
        "max": max(values, default=0.0),
    }


def summarize(res: SimResult) -> dict[str, Any]:
    """The JSON summary of one run (the schema of `frontdesk simulate --json`)."""
    done = [r for r in res.records if r.start is not None and r.end is not None]
    by_class: dict[str, list[JobRecord]] = defaultdict(list)
    for r in done:
        by_class[r.job_class].append(r)
        if r.job.trial:
            by_class["trial"].append(r)
    classes = {}
    for cls, recs in sorted(by_class.items()):
        waits = [r.start - r.submit for r in recs if r.start is not None]
        classes[cls] = {
            "jobs": len(recs),
            "wait_s": _stats(waits),
            "bsld": _stats([bounded_slowdown(r) for r in recs]),
            "preempted": sum(r.preempted for r in recs),
        }
    per_principal: dict[str, list[float]] = defaultdict(list)
    for r in done:
        per_principal[r.job.principal].append(bounded_slowdown(r))
    fairness = jain([sum(v) / len(v) for v in per_principal.values()])
    span = max(1e-9, res.window[1] - res.window[0])
    trials = [r.end - r.submit for r in done if r.job.trial and r.end is not None]
    train_free = [
        r.start - r.submit for r in done if r.job_class == "training" and r.free_at_submit and r.start is not None
    ]
    return {
        "policy": res.policy,
        "workload": res.workload,
        "jobs": len(res.records),
        "unfinished": len(res.records) - len(done),
        "classes": classes,
        "bsld_mean": sum(bounded_slowdown(r) for r in done) / len(done) if done else 0.0,
        "gpu_util": res.gpu_seconds / (res.gpu_capacity * span) if res.gpu_capacity else 0.0,
        "cpu_util": res.cpu_seconds / (res.cpu_capacity * span) if res.cpu_capacity else 0.0,
        "trial_turnaround_s": _stats(trials),
        "training_wait_when_free_max_s": max(train_free, default=0.0),
        "fairness_jain": fairness,
        "trial_revocations": [
            {"principal": v.principal, "reason": v.reason, "until": v.until} for v in res.revocations
        ],
        "borrowed_starts": sum(1 for r in done if r.borrowed),
        "window_s": [res.window[0], res.window[1]],
        "passes": res.passes,
    }
