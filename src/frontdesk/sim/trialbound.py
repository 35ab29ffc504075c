"""A lower bound on trial waits that holds for ANY non-preemptive policy running every hpc job of a trace.

The argument (docs/policy.md, "A lower bound for any policy"): on a machine of P processors, a job of width
w > P/2 cannot overlap another such job, and while it runs no trial of width k > P - w can start. So a trial
of that width arriving at a inside the job's run (s, s + r) waits at least s + r - a: over x seconds when
a < s + r - x. The runs of these "blocking" jobs are disjoint, so a trial is counted at most once, and

    late(x) >= sum over blocking jobs j of c_j(s_j), c_j(s) = #blocked trials arriving in (s, s + r_j - x).

A policy chooses the starts s_j >= submit_j. To keep hpc bounded slowdown within a factor of a baseline
(every job's bsld >= 1, a blocking job's bsld >= (s_j - submit_j + r_j) / max(r_j, 10)), it must keep

    sum over blocking jobs of (s_j - submit_j) / max(r_j, 10) <= W   (the delay budget, computed by the caller).

Every other constraint (the other hpc jobs, the trials' own widths) is dropped, so the minimum of the sum
under this budget alone is a lower bound on what any policy within the bound achieves. That minimum is
bounded below by Lagrangian duality: for every lambda >= 0,

    min sum c_j(s_j)  >=  sum_j min_s [c_j(s) + lambda (s - submit_j) / max(r_j, 10)] - lambda W,

and c_j(s) + penalty is smallest at s = submit_j or just as a blocked trial arrives (s = a_i), so each
inner minimum is over a short staircase. If late(x) forces more than the top 5 % of trials, p95 > x.
Pure: numbers in, numbers out.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass

from frontdesk.sim.workload import SimJob

__all__ = [
    "Arrival",
    "Blocking",
    "TrialBound",
    "delay_budget",
    "dodge_budget",
    "inputs",
    "late_at_least",
    "p95_lower_bound",
    "trial_bound",
]


@dataclass(frozen=True)
class Blocking:
    """An hpc job too wide to run beside some trial: its submission, run length and width."""

    submit: float
    run: float
    cpus: int


@dataclass(frozen=True)
class Arrival:
    """A trial's arrival time and width."""

    at: float
    cpus: int


@dataclass(frozen=True)
class TrialBound:
    """What any non-preemptive policy within the delay budget must give the trials."""

    trials: int
    blocking: int
    budget: float
    late_30: int
    """Trials that must wait over 30 s (a lower bound)."""
    p95_floor: float
    """A lower bound on the trials' wait p95 (0 when none can be proved)."""

    @property
    def late_30_share(self) -> float:
        """The share of trials that must wait over 30 s."""
        return self.late_30 / self.trials if self.trials else 0.0


def inputs(jobs: Sequence[SimJob], procs: int) -> tuple[list[Blocking], list[Arrival]]:
    """A workload's hpc jobs (as they run: cut at their requested time) and its agent jobs' arrivals."""
    hpc = [Blocking(j.submit, min(j.runtime, j.walltime), j.cpus) for j in jobs if not j.agent]
    return hpc, [Arrival(j.submit, j.cpus) for j in jobs if j.agent and j.cpus <= procs]


def delay_budget(jobs: Sequence[Blocking], procs: int, mean_bsld_cap: float) -> float:
    """The budget W that a mean bounded slowdown of at most `mean_bsld_cap` over `jobs` (all of them, or the
    large ones) leaves the blocking jobs among them: every job's bsld is at least 1, a blocking job's at least
    (delay + run) / max(run, 10)."""
    blocking = [j for j in jobs if 2 * j.cpus > procs]
    own = sum(j.run / max(j.run, 10.0) for j in blocking)
    return mean_bsld_cap * len(jobs) - (len(jobs) - len(blocking)) - own


def _staircase(
    sub: float, scale: float, length: float, arrivals: Sequence[float], budget: float
) -> list[tuple[float, int]]:
    """(delay / scale, trials caught) for start times s >= sub that catch fewer trials than any earlier one;
    the window is (s, s + length); starts whose delay alone exceeds the budget are left out."""
    if length <= 0:
        return [(0.0, 0)]
    i = bisect.bisect_right(arrivals, sub)
    hi = bisect.bisect_left(arrivals, sub + length, i)
    best = hi - i
    out = [(0.0, best)]
    limit = sub + budget * scale
    n = len(arrivals)
    while best > 0 and i < n:
        s = arrivals[i]
        if s > limit:
            break
        i = bisect.bisect_right(arrivals, s, i)  # trials arriving exactly at s are not caught (open window)
        while hi < n and arrivals[hi] < s + length:
            hi += 1
        caught = hi - i
        if caught < best:
            best = caught
            out.append(((s - sub) / scale, caught))
    return out


def late_at_least(jobs: Sequence[Blocking], trials: Sequence[Arrival], procs: int, budget: float, x: float) -> int:
    """A lower bound on how many trials wait over `x` seconds, under delay budget `budget`."""
    blocking = [j for j in jobs if 2 * j.cpus > procs]
    by_width: dict[int, list[float]] = {}
    stairs: list[list[tuple[float, int]]] = []
    for j in blocking:
        least = procs - j.cpus + 1  # trials at least this wide cannot start beside it
        if least not in by_width:
            by_width[least] = sorted(t.at for t in trials if t.cpus >= least)
        stairs.append(_staircase(j.submit, max(j.run, 10.0), j.run - x, by_width[least], max(budget, 0.0)))
    if budget < 0:  # no schedule keeps hpc within the bound: nothing can be claimed about such a schedule
        return 0
    return _dual(stairs, budget)


def _dual(stairs: list[list[tuple[float, int]]], budget: float) -> int:
    """max over lambda of sum_j min_k (c_jk + lambda t_jk) - lambda budget, rounded up (counts are integers)."""

    def value(lam: float) -> float:
        return sum(min(c + lam * t for t, c in st) for st in stairs) - lam * budget

    best = value(0.0)
    grid = (
        [10.0**e for e in range(-8, 9)] + [2.0 * 10.0**e for e in range(-8, 9)] + [5.0 * 10.0**e for e in range(-8, 9)]
    )
    grid.sort()
    vals = [value(lam) for lam in grid]
    k = max(range(len(grid)), key=lambda i: vals[i])
    best = max(best, vals[k])
    lo, hi = grid[max(0, k - 1)], grid[min(len(grid) - 1, k + 1)]
    for _ in range(40):  # golden-section refinement: any lambda gives a valid bound, so this only tightens it
        m1, m2 = lo + (hi - lo) * 0.382, lo + (hi - lo) * 0.618
        v1, v2 = value(m1), value(m2)
        best = max(best, v1, v2)
        lo, hi = (lo, m2) if v1 >= v2 else (m1, hi)
    return max(0, math.ceil(best - 1e-6))


def p95_lower_bound(jobs: Sequence[Blocking], trials: Sequence[Arrival], procs: int, budget: float) -> float:
    """The largest wait x (to 1 s) such that more than the fastest 95 % of trials are forced to wait past x."""
    n = len(trials)
    if not n:
        return 0.0
    need = n - math.floor((n - 1) * 0.95)  # late trials that put the interpolated p95 above x
    if late_at_least(jobs, trials, procs, budget, 0.0) < need:
        return 0.0
    lo, hi = 0.0, max((j.run for j in jobs), default=0.0)
    while hi - lo > 1.0:
        mid = (lo + hi) / 2
        if late_at_least(jobs, trials, procs, budget, mid) >= need:
            lo = mid
        else:
            hi = mid
    return lo


def trial_bound(jobs: Sequence[Blocking], trials: Sequence[Arrival], procs: int, budget: float) -> TrialBound:
    """Both figures for one trace: trials forced past 30 s, and the floor under p95."""
    return TrialBound(
        len(trials),
        sum(2 * j.cpus > procs for j in jobs),
        budget,
        late_at_least(jobs, trials, procs, budget, 30.0),
        p95_lower_bound(jobs, trials, procs, budget),
    )


def dodge_budget(jobs: Sequence[Blocking], trials: Sequence[Arrival], procs: int) -> float:
    """The smallest delay budget (to 1 %) under which the bound no longer forces p95 over 30 s: how much a
    schedule that knew when the trials come would have to delay the wide jobs to start them between floods."""
    need = len(trials) - math.floor((len(trials) - 1) * 0.95)
    if not trials or late_at_least(jobs, trials, procs, 0.0, 30.0) < need:
        return 0.0
    lo, hi = 0.0, 1.0
    while late_at_least(jobs, trials, procs, hi, 30.0) >= need:
        lo, hi = hi, hi * 2
    while hi - lo > 0.01 * hi:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if late_at_least(jobs, trials, procs, mid, 30.0) >= need else (lo, mid)
    return hi
