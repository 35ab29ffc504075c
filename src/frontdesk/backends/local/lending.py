"""Trials on the cores of suspended jobs (the embedded backend's side of docs/policy.md, "Preemption by suspension").

A picker (policy/embedded.py) may answer `Picks`: attempts to start, and `Lend`s: start a granted trial on
cores lent by running batch jobs, which are suspended first. `Lending` keeps the groups as the simulator does
(sim/suspend.py): the victims keep their allocation (their cores count as held by the group, also after one of
them ends, until the group's last trial ends), the trials on lent cores hold none of their own, and later trials
join a group's idle lent cores (extending its end where the rules allow; with `fill`, queued jobs that end in
time run there too). When the last job on a group's cores ends its victims resume. What a restarted
gateway needs is in the attempt folders: each trial's launch.json holds its group (`lent`), each victim's
`suspend` file the request its shepherd follows. Pure bookkeeping: the backend does the file writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Group", "Lend", "Lending", "Picks", "Suspensions"]


@dataclass(frozen=True)
class Lend:
    """Start `trial` on `cpus` cores lent by `victims` (suspended now unless they already are) until `until`."""

    trial: str
    victims: tuple[str, ...]
    cpus: int
    until: float
    """The group's expected end (its first trial's time limit): no trial joins past it."""


@dataclass(frozen=True)
class Picks:
    """A picker's answer: what starts on free resources, and what starts on lent cores."""

    starts: Sequence[str]
    lends: Sequence[Lend] = ()
    suspendable: frozenset[str] = frozenset()
    """Of `starts`, the batch jobs a trial may suspend while suspension is on: their shepherd joins them to a
    freezer cgroup at their start (any job may be suspended later; the others are frozen by signals)."""


@dataclass
class Group:
    """Jobs suspended together, and the trials running on their cores."""

    victims: tuple[str, ...]
    cpus: int
    """The cores the victims held when suspended: held by the group until it ends."""
    at: float
    until: float
    trials: dict[str, int] = field(default_factory=dict)
    """Running trial -> the cores it was lent."""
    gone: set[str] = field(default_factory=set)
    """Victims that ended while suspended (nothing to resume)."""

    @property
    def idle(self) -> int:
        """Lent cores no trial uses now."""
        return self.cpus - sum(self.trials.values())

    def record(self) -> dict[str, Any]:
        """What a trial's launch.json keeps of its group (`lent`), to rebuild it after a restart."""
        return {"victims": list(self.victims), "cpus": self.cpus, "at": self.at, "until": self.until}


@dataclass(frozen=True)
class Suspensions:
    """What a picker sees of the suspensions now (`FreeResources.suspensions`)."""

    groups: tuple[Group, ...] = ()
    lent: frozenset[str] = frozenset()
    """Running trials on lent cores: they hold no cores of their own."""
    frozen: frozenset[str] = frozenset()
    """Running jobs suspended now (in a group)."""
    history: Mapping[str, tuple[float, float | None]] = field(default_factory=dict)
    """Running job -> (seconds suspended in all, when it last resumed)."""
    suspendable: frozenset[str] = frozenset()
    """Running jobs a trial may suspend: launched ready to be frozen (every job this backend starts; not one an
    older gateway started while suspension was off)."""


class Lending:
    """The groups of one backend (see the module docstring)."""

    def __init__(self) -> None:
        self.groups: dict[str, Group] = {}
        """First victim -> its group."""
        self.of_trial: dict[str, Group] = {}
        self.of_victim: dict[str, Group] = {}
        self.history: dict[str, tuple[float, float | None]] = {}

    def held_cpus(self) -> int:
        """Cores the groups hold (their victims' allocation)."""
        return sum(g.cpus for g in self.groups.values())

    def add(self, lend: Lend, victim_cpus: Mapping[str, int], now: float) -> tuple[Group, list[str]]:
        """Record `lend` (a new group, or a job joining one); the group and the victims whose suspend request
        must be written now (a new group's, or all of a group whose end the join extends)."""
        group = self.groups.get(lend.victims[0]) if lend.victims else None
        asks: list[str] = []
        if group is None or group.victims != lend.victims:
            cpus = sum(victim_cpus.get(v, 0) for v in lend.victims)
            group = Group(lend.victims, cpus, now, lend.until)
            self.groups[lend.victims[0]] = group
            for v in lend.victims:
                self.of_victim[v] = group
            asks = list(lend.victims)
        elif lend.until > group.until:  # `extend`: the victims stay suspended longer
            group.until = lend.until
            asks = [v for v in group.victims if v not in group.gone]
        group.trials[lend.trial] = lend.cpus
        self.of_trial[lend.trial] = group
        return group, asks

    def restore(self, trial: str, record: Mapping[str, Any], cpus: int) -> None:
        """A running trial's group, from its launch.json after a restart."""
        victims = tuple(str(v) for v in record.get("victims") or ())
        if not victims:
            return
        group = self.groups.get(victims[0])
        until = float(record.get("until") or 0.0)
        if group is None:
            group = Group(victims, int(record.get("cpus") or 0), float(record.get("at") or 0.0), until)
            self.groups[victims[0]] = group
            for v in victims:
                self.of_victim[v] = group
        group.until = max(group.until, until)  # an extended group: its latest trial's record says how long
        group.trials[trial] = cpus
        self.of_trial[trial] = group

    def ended(self, bid: str, now: float) -> list[str]:
        """Attempt `bid` is over: the victims to resume (those of a group whose last trial it was)."""
        self.history.pop(bid, None)
        victim_of = self.of_victim.get(bid)
        if victim_of is not None:
            victim_of.gone.add(bid)
        group = self.of_trial.pop(bid, None)
        if group is None:
            return []
        group.trials.pop(bid, None)
        if group.trials:
            return []
        return self._close(group, now)

    def _close(self, group: Group, now: float) -> list[str]:
        self.groups.pop(group.victims[0], None)
        resume = []
        for v in group.victims:
            self.of_victim.pop(v, None)
            if v not in group.gone:
                total, _ = self.history.get(v, (0.0, None))
                self.history[v] = (total + max(0.0, now - group.at), now)
                resume.append(v)
        return resume

    def orphans(self, now: float) -> list[str]:
        """After a restart: victims of groups no running trial holds (to resume), those groups dropped."""
        out: list[str] = []
        for group in [g for g in self.groups.values() if not g.trials]:
            out += self._close(group, now)
        return out

    def view(self, suspendable: frozenset[str]) -> Suspensions:
        """What a picker sees."""
        return Suspensions(
            groups=tuple(self.groups.values()),
            lent=frozenset(self.of_trial),
            frozen=frozenset(self.of_victim),
            history=dict(self.history),
            suspendable=suspendable,
        )
