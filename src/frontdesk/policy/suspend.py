"""Preemption by suspension: which running batch jobs a blocked trial may suspend. Pure: views in, ids out.

A granted trial with a short time limit that cannot start may suspend running batch jobs (Slurm's
`PreemptMode=SUSPEND,GANG`; SIGSTOP/SIGCONT or the cgroup freezer on the embedded backend). A suspended job
keeps its cores (nobody but the trials it was suspended for runs on them) and its remaining run time, so its end
shifts by the suspension; it resumes when those trials have ended. Who may be suspended (`Victim`):
- batch work only (not a trial, not an exclusive placement), in the trial's pool;
- not a job suspended before unless it has run `rest_s` since it resumed (never twice in a row);
- only while its suspensions so far plus this one (at most the trial's time limit) stay within `max_share` of
  its requested time (so a job asking 12 h may lose at most 72 min at 10 %, one asking 10 min none).
Among those, the fewest jobs that hold enough cores: one job if one is wide enough (the narrowest such, so the
fewest cores sit idle, then the most recently started), else the widest first (most recently started first).
`TURNAROUND` (the simulator's `frontdesk-suspend`) counts the share of the job's expected turnaround (its wait
plus its requested time: its slowdown grows by 10 % at most), rests 60 s, lets a flood's later trials join a
suspension past its first trial's limit while every victim's share allows, and runs queued jobs that end in time
on the lent cores no trial uses (`fills`; 4 kept idle for trials).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from frontdesk.policy.model import JobView, Part

__all__ = [
    "TURNAROUND",
    "SuspendRules",
    "Victim",
    "choose_victims",
    "eligible_trial",
    "fills",
    "lend_parts",
    "may_suspend",
]


@dataclass(frozen=True)
class SuspendRules:
    """When a trial may suspend batch jobs, and how much any one job may be suspended."""

    trial_limit_s: float = 600.0
    """Only trials asking at most this long may suspend (the trial privilege's own cap, 10 min, by default)."""
    max_share: float = 0.10
    """A job is suspended at most this share of its requested time, in total."""
    rest_s: float = 600.0
    """A job resumed must run this long before it may be suspended again."""
    grace_s: float = 0.0
    """A trial suspends only after waiting this long (one that would start soon on its own does not)."""
    count_wait: bool = False
    """The share is of the job's expected turnaround (its wait before it started plus its requested time), not of
    its requested time alone: a job suspended so never sees its turnaround, hence its slowdown, grow by more than
    `max_share`."""
    extend: bool = False
    """A trial whose limit ends past its group's may still join it, the group's victims suspended longer, while each
    one's share allows (otherwise it suspends others)."""
    fill: bool = False
    """Lent cores no trial uses run queued jobs (first come) whose time limit ends before the group's expected end,
    so the victims' cores do not sit idle; the victims resume when the last of them ends."""
    keep_for_trials: float = 4.0
    """With `fill`: lent cores left idle for the trials of a flood still to come."""

    def __post_init__(self) -> None:
        bad = self.trial_limit_s <= 0 or not 0 <= self.max_share <= 1 or self.rest_s < 0 or self.grace_s < 0
        if bad or self.keep_for_trials < 0:
            raise ValueError(f"suspend rules out of range: {self}")


TURNAROUND = SuspendRules(rest_s=60.0, count_wait=True, extend=True, fill=True)
"""The measured rules (docs/policy.md): a job's turnaround grows by at most 10 % by suspension, a flood shares
one suspension, the victims' idle cores run queued jobs that end in time."""


@dataclass(frozen=True)
class Victim:
    """A running batch job as the choice sees it."""

    id: str
    pool: str
    parts: tuple[Part, ...]
    started: float
    walltime_s: float
    suspended_s: float = 0.0
    """Suspended so far, in total."""
    resumed_at: float | None = None
    """When it last resumed (None: never suspended)."""
    trial: bool = False
    exclusive: bool = False
    waited_s: float = 0.0
    """How long it was queued before it started (counted only with `SuspendRules.count_wait`)."""

    @property
    def cpus(self) -> float:
        """Cores it holds."""
        return sum(p.cpus for p in self.parts)


def eligible_trial(job: JobView, rules: SuspendRules, now: float) -> bool:
    """Whether a queued job may suspend others: a granted trial, cores only, short, past its grace."""
    return (
        job.trial
        and not job.gpus
        and not job.shared_gpu
        and job.walltime_s <= rules.trial_limit_s
        and now - job.queued_at >= rules.grace_s
    )


def may_suspend(v: Victim, pool: str, length: float, rules: SuspendRules, now: float) -> bool:
    """Whether `v` may be suspended for up to `length` seconds for a trial of `pool`."""
    if v.trial or v.exclusive or v.pool != pool:
        return False
    if v.resumed_at is not None and now - v.resumed_at < rules.rest_s:
        return False
    base = v.walltime_s + (v.waited_s if rules.count_wait else 0.0)
    return v.suspended_s + length <= rules.max_share * base


def choose_victims(
    need: float, pool: str, length: float, running: Sequence[Victim], rules: SuspendRules, now: float
) -> list[Victim]:
    """The fewest jobs to suspend for `need` cores for up to `length` seconds; [] when none can."""
    ok = [v for v in running if may_suspend(v, pool, length, rules, now)]
    wide = [v for v in ok if v.cpus >= need]
    if wide:
        return [min(wide, key=lambda v: (v.cpus, -v.started, v.id))]
    got: list[Victim] = []
    held = 0.0
    for v in sorted(ok, key=lambda v: (-v.cpus, -v.started, v.id)):
        got.append(v)
        held += v.cpus
        if held >= need:
            return got
    return []


def fills(
    queued: Sequence[JobView], pool: str, idle: float, until: float, rules: SuspendRules, now: float
) -> list[JobView]:
    """Queued jobs (in the order given: first come) that run on `idle` lent cores of `pool` and end by `until`,
    `keep_for_trials` cores left over; [] unless `rules.fill`."""
    out: list[JobView] = []
    left = idle - rules.keep_for_trials if rules.fill else 0.0
    for view in queued:
        if left < 1:
            break
        if view.pool == pool and not view.gpus and not view.shared_gpu and view.cpus <= left:
            if now + view.walltime_s <= until:
                out.append(view)
                left -= view.cpus
    return out


def lend_parts(need: float, lendable: Sequence[Part]) -> tuple[Part, ...] | None:
    """`need` whole cores out of `lendable` (cores suspended jobs hold and no trial uses), node by node in
    order; None if they hold too few."""
    out: list[Part] = []
    left = need
    for p in lendable:
        if left <= 0:
            break
        take = min(p.cpus, left)
        if take > 0:
            out.append(Part(p.node, take, 0, 0))
            left -= take
    return tuple(out) if left <= 1e-9 else None
