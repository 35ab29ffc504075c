"""Preemption by suspension, live on the embedded backend: which waiting trials start on the cores of which
running jobs. Pure: views in, lends out.

The choice is the simulator's (`policy/suspend.py`: `eligible_trial`, `may_suspend`, `choose_victims`, `fills`,
`lend_parts`, the same `SuspendRules`) in the simulator's order (sim/suspend.py, `Suspender.after_pass`): after
the plan, the trials it did not start, in arrival order, each first joins a group of suspended jobs of its pool
whose idle lent cores fit it and whose expected end its time limit does not pass (or, with `extend`, whose
victims' shares allow the group to last until then), else suspends the fewest batch jobs that hold enough cores
(a new group, lasting its time limit); then, with `fill`, queued jobs that end in time run on each group's idle
lent cores. Live there is one more condition: a job's memory must be free (a suspended job keeps its memory).
The backend applies the lends (backends/local/suspending.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from frontdesk.backends.local.lending import Lend, Suspensions
from frontdesk.policy.model import JobView, Part, RunningView
from frontdesk.policy.suspend import (
    SuspendRules,
    Victim,
    choose_victims,
    eligible_trial,
    fills,
    lend_parts,
    may_suspend,
)

__all__ = ["choose_lends", "ghost_views", "running_view"]


@dataclass
class _Open:
    """A group as the choice sees it while it lends (idle cores shrink as jobs join, its end may grow)."""

    victims: tuple[str, ...]
    pool: str
    at: float
    until: float
    idle: float


def running_view(job: Any, view: JobView, node: str, sus: Suspensions) -> RunningView:
    """What the plan sees of a running attempt: a trial on lent cores holds none; a suspended job's expected end
    is shifted by its suspensions (the current one to its group's expected end), as in the simulator."""
    bid = job.backend_id
    started = getattr(job, "started_at", None) or job.queued_at
    end = started + view.walltime_s + sus.history.get(bid, (0.0, None))[0]
    group = next((g for g in sus.groups if bid in g.victims), None) if bid in sus.frozen else None
    if group is not None:
        end += group.until - group.at
    cpus = 0.0 if bid in sus.lent else float(job.cpus)  # its memory is its own, its cores are not
    parts = (Part(node, cpus, job.memory_bytes, view.gpus),)
    return RunningView(bid, parts, end, job_class=view.job_class, trial=view.trial)


def ghost_views(running: Sequence[Any], sus: Suspensions, node_of: dict[str, str]) -> list[RunningView]:
    """The cores of suspended jobs that ended while their group lasts: held by the group until its end."""
    here = {j.backend_id: int(j.cpus) for j in running}
    out = []
    for g in sus.groups:
        ghost = g.cpus - sum(here.get(v, 0) for v in g.victims)
        node = next((node_of[m] for m in (*g.victims, *g.trials) if m in node_of), None)
        if ghost > 0 and node is not None:
            out.append(RunningView(f"lent:{g.victims[0]}", (Part(node, float(ghost), 0, 0),), g.until))
    return out


def _victim(job: Any, view: JobView, sus: Suspensions) -> Victim:
    total, resumed = sus.history.get(job.backend_id, (0.0, None))
    started = getattr(job, "started_at", None) or job.queued_at
    parts = (Part(view.pool, float(job.cpus), 0, 0),)
    waited = max(0.0, started - job.queued_at)
    return Victim(job.backend_id, view.pool, parts, started, view.walltime_s, total, resumed, view.trial, False, waited)


class _Choice:
    """One pass's lends, made in the simulator's order (see the module docstring)."""

    def __init__(
        self, running: Sequence[tuple[Any, JobView]], sus: Suspensions, rules: SuspendRules, now: float
    ) -> None:
        self.rules, self.now = rules, now
        views = {job.backend_id: view for job, view in running}
        self.members = {job.backend_id: _victim(job, view, sus) for job, view in running}
        self.groups: list[_Open] = []
        for g in sus.groups:
            pool = next((views[m].pool for m in (*g.victims, *g.trials) if m in views), None)
            if pool is not None:
                self.groups.append(_Open(g.victims, pool, g.at, g.until, float(g.idle)))
        self.free = [
            self.members[b] for b in views if b in sus.suspendable and b not in sus.frozen and b not in sus.lent
        ]

    def join(self, view: JobView) -> Lend | None:
        """A place for `view` in an open group: idle lent cores, and an end it does not pass (or may extend)."""
        end = self.now + view.walltime_s
        for g in self.groups:
            if g.pool != view.pool or lend_parts(view.cpus, (Part(g.pool, g.idle, 0, 0),)) is None:
                continue
            if end <= g.until or self._extend(g, end):
                g.idle -= view.cpus
                return Lend(view.id, g.victims, int(view.cpus), g.until)
        return None

    def _extend(self, g: _Open, until: float) -> bool:
        """With `extend`: the group lasts until `until` if every victim's share allows it."""
        if not self.rules.extend:
            return False
        victims = [self.members[v] for v in g.victims if v in self.members]
        if not all(may_suspend(v, g.pool, until - g.at, self.rules, self.now) for v in victims):
            return False
        g.until = until
        return True

    def suspend(self, view: JobView) -> Lend | None:
        """A new group for `view`: the simulator's victims, lasting its time limit."""
        chosen = choose_victims(view.cpus, view.pool, view.walltime_s, self.free, self.rules, self.now)
        if not chosen:
            return None
        taken = {v.id for v in chosen}
        self.free = [v for v in self.free if v.id not in taken]
        victims = tuple(v.id for v in chosen)
        until = self.now + view.walltime_s
        self.groups.append(_Open(victims, view.pool, self.now, until, sum(v.cpus for v in chosen) - view.cpus))
        return Lend(view.id, victims, int(view.cpus), until)

    def fill(self, queued: Sequence[JobView], memory: int) -> list[Lend]:
        """With `fill`: queued jobs that end by a group's end, on its idle lent cores (`fills`), memory allowing."""
        out: list[Lend] = []
        for g in self.groups:
            if g.idle < 1:
                continue
            for view in fills(queued, g.pool, g.idle, g.until, self.rules, self.now):
                if view.memory_bytes <= memory and all(lend.trial != view.id for lend in out):
                    g.idle -= view.cpus
                    memory -= view.memory_bytes
                    out.append(Lend(view.id, g.victims, int(view.cpus), g.until))
        return out


def choose_lends(
    waiting: Sequence[JobView],
    running: Sequence[tuple[Any, JobView]],
    sus: Suspensions,
    rules: SuspendRules,
    now: float,
    memory: int,
) -> list[Lend]:
    """The lends for the jobs in `waiting` (queued, not started by the plan); `memory`: bytes free after the
    plan's starts."""
    choice = _Choice(running, sus, rules, now)
    out: list[Lend] = []
    ordered = sorted(waiting, key=lambda v: (v.queued_at, v.id))
    for view in ordered:
        if not eligible_trial(view, rules, now) or view.memory_bytes > memory:
            continue
        lend = choice.join(view) or choice.suspend(view)
        if lend is not None:
            out.append(lend)
            memory -= view.memory_bytes
    lent = {lend.trial for lend in out}
    return out + choice.fill([v for v in ordered if v.id not in lent], memory)
