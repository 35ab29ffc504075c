"""Priority: a multi-level feedback queue, fairshare per principal and group, and time-of-day weights.

Levels are small integers, higher starts first. Agent and trial jobs enter high and drop one level if
they have not started within `drop_after`; training ages up one level per `age_every` of waiting; hpc
enters low. Within a level, jobs are ordered by fairshare × time-of-day weight, then by age.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from frontdesk.policy.config import ClassPriority, PriorityConfig
from frontdesk.policy.model import JobView

__all__ = [
    "FairshareLedger",
    "FairshareSnapshot",
    "level",
    "rank",
    "ranker",
    "score",
    "slurm_priority",
    "time_weight",
]


def _class_cfg(cfg: PriorityConfig, job_class: str, trial: bool) -> ClassPriority:
    key = "trial" if trial else job_class
    return cfg.classes.get(key) or cfg.classes.get("agent") or ClassPriority(enter=1)


def level(job_class: str, trial: bool, waited_s: float, cfg: PriorityConfig) -> int:
    """The MLFQ level of a job that has waited `waited_s`."""
    c = _class_cfg(cfg, job_class, trial)
    lvl = c.enter
    if c.drop_after and waited_s >= c.drop_after:
        lvl = max(c.floor, lvl - 1)
    if c.age_every:
        lvl = max(lvl, min(c.ceiling, c.enter + int(waited_s // c.age_every)))
    return lvl


@dataclass
class FairshareLedger:
    """Decayed resource use per principal and per group (GPU-seconds count as 8 core-seconds)."""

    half_life: float = 3600.0
    principals: dict[str, tuple[float, float]] = field(default_factory=dict)
    groups: dict[str, tuple[float, float]] = field(default_factory=dict)
    _lent: bool = field(default=False, repr=False, compare=False)
    """A snapshot holds the tables: the next charge copies them first (a snapshot never sees a later charge)."""

    def _decay(self, table: dict[str, tuple[float, float]], key: str, now: float) -> float:
        value, at = table.get(key, (0.0, now))
        return value * math.pow(0.5, max(0.0, now - at) / self.half_life)

    def charge(self, principal: str, group: str, cpus: float, gpus: float, seconds: float, now: float) -> None:
        """Add a finished (or running) job's use."""
        if self._lent:
            self.principals, self.groups, self._lent = dict(self.principals), dict(self.groups), False
        amount = (cpus + 8.0 * gpus) * seconds
        self.principals[principal] = (self._decay(self.principals, principal, now) + amount, now)
        if group:
            self.groups[group] = (self._decay(self.groups, group, now) + amount, now)

    def snapshot(self, now: float, principal_weight: float) -> FairshareSnapshot:
        """Fairshare factors at `now`: 1.0 for no recent use, 0.5 at the mean use of active principals. Worked
        out when first asked for (a pass whose jobs all rank by age never asks)."""
        self._lent = True
        return FairshareSnapshot(self.principals, self.groups, now, self.half_life, principal_weight)


def _factors(table: dict[str, tuple[float, float]], now: float, half_life: float) -> dict[str, float]:
    """Each key's factor at `now`: 1 / (1 + its decayed use / the mean decayed use)."""
    values = {k: value * math.pow(0.5, max(0.0, now - at) / half_life) for k, (value, at) in table.items()}
    mean = sum(values.values()) / len(values) if values else 0.0
    return {k: (1.0 if mean <= 0 else 1.0 / (1.0 + v / mean)) for k, v in values.items()}


class FairshareSnapshot:
    """Fairshare factors frozen for one scheduling pass (each table's worked out when first read)."""

    def __init__(
        self,
        principals: dict[str, tuple[float, float]],
        groups: dict[str, tuple[float, float]],
        now: float,
        half_life: float,
        principal_weight: float,
    ) -> None:
        self._tables, self._now, self._half_life = (principals, groups), now, half_life
        self.principal_weight = principal_weight

    @cached_property
    def principals(self) -> dict[str, float]:
        """Principal -> factor."""
        return _factors(self._tables[0], self._now, self._half_life)

    @cached_property
    def groups(self) -> dict[str, float]:
        """Group -> factor."""
        return _factors(self._tables[1], self._now, self._half_life)

    def factor(self, principal: str, group: str) -> float:
        """The blended principal/group factor in (0, 1]."""
        p = self.principals.get(principal, 1.0)
        if not group:
            return p
        w = self.principal_weight
        return w * p + (1 - w) * self.groups.get(group, 1.0)


def _in_hours(hour: float, start: int, end: int) -> bool:
    return start <= hour < end if start <= end else (hour >= start or hour < end)


def time_weight(job_class: str, hour: float, cfg: PriorityConfig) -> float:
    """The product of the time-of-day weights that apply to `job_class` at `hour` (local, 0–24)."""
    w = 1.0
    for tw in cfg.time_weights:
        if job_class in tw.classes and _in_hours(hour, tw.start_hour, tw.end_hour):
            w *= tw.weight
    return w


def score(job: JobView, hour: float, cfg: PriorityConfig, shares: FairshareSnapshot | None) -> float:
    """The in-level score (fairshare × time weight), in (0, 100]."""
    fs = shares.factor(job.principal, job.group) if shares else 1.0
    return fs * time_weight(job.job_class, hour, cfg)


def rank(
    job: JobView, now: float, hour: float, cfg: PriorityConfig, shares: FairshareSnapshot | None
) -> tuple[int, float, float]:
    """A sort key: smaller starts first."""
    lvl = level(job.job_class, job.trial, now - job.queued_at, cfg)
    return (-lvl, -score(job, hour, cfg, shares), job.queued_at)


def ranker(
    now: float, hour: float, cfg: PriorityConfig, shares: FairshareSnapshot | None
) -> Callable[[JobView], tuple[int, float, float]]:
    """`rank(job, now, hour, cfg, shares)` as one function for a whole pass: the class rules, time weights and
    fairshare factors are looked up once per class and per principal, the same values `rank` computes."""
    known: dict[tuple[str, bool, str, str], tuple[int, int | None, int, int | None, int, float]] = {}
    """(class, trial, principal, group) -> the class's level rules and -(fairshare × time weight)"""

    def key(job: JobView) -> tuple[int, float, float]:
        k = (job.job_class, job.trial, job.principal, job.group)
        got = known.get(k)
        if got is None:
            c = _class_cfg(cfg, job.job_class, job.trial)
            fs = shares.factor(job.principal, job.group) if shares else 1.0
            got = known[k] = (
                c.enter,
                c.drop_after,
                c.floor,
                c.age_every,
                c.ceiling,
                -(fs * time_weight(job.job_class, hour, cfg)),
            )
        enter, drop_after, floor, age_every, ceiling, neg_score = got
        waited_s = now - job.queued_at
        lvl = enter  # level(), with the class rules looked up once
        if drop_after and waited_s >= drop_after:
            lvl = max(floor, lvl - 1)
        if age_every:
            lvl = max(lvl, min(ceiling, enter + int(waited_s // age_every)))
        return (-lvl, neg_score, job.queued_at)

    return key


def slurm_priority(job_class: str, trial: bool, fairshare: float, cfg: PriorityConfig) -> int:
    """The entry priority as one integer (Slurm nice/priority, the embedded queue's order)."""
    lvl = level(job_class, trial, 0.0, cfg)
    return lvl * 1000 + int(max(0.0, min(fairshare, 1.0)) * 999)


def __getattr__(name: str) -> object:
    """`slurm_nice` moved to the Slurm renderer (backends must not import policy); the old name still works."""
    if name == "slurm_nice":
        from frontdesk.backends.slurm.render import slurm_nice

        return slurm_nice
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
