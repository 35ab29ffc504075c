"""Preemption by suspension, live on the embedded backend: which waiting trials start on the cores of which
running jobs. Pure: views in, lends out.

The choice is the simulator's (`policy/suspend.py`: `eligible_trial`, `choose_victims`, `lend_parts`, the same
`SuspendRules`) in the simulator's order (sim/suspend.py, `Suspender.after_pass`): after the plan, the trials it
did not start, in arrival order, each first joins a group of suspended jobs of its pool whose idle lent cores fit
it and whose expected end its time limit does not pass, else suspends the fewest batch jobs that hold enough
cores (a new group, lasting its time limit). Live there is one more condition: the trial's memory must be free
(a suspended job keeps its memory). The backend applies the lends (backends/local/suspending.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from frontdesk.backends.local.lending import Group, Lend, Suspensions
from frontdesk.policy.model import JobView, Part, RunningView
from frontdesk.policy.suspend import SuspendRules, Victim, choose_victims, eligible_trial, lend_parts

__all__ = ["choose_lends", "ghost_views", "running_view"]


@dataclass
class _Open:
    """A group as the choice sees it while it lends (idle cores shrink as trials join)."""

    victims: tuple[str, ...]
    pool: str
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
    return Victim(job.backend_id, view.pool, parts, started, view.walltime_s, total, resumed, view.trial)


def _open(g: Group, views: dict[str, JobView]) -> _Open | None:
    pool = next((views[m].pool for m in (*g.victims, *g.trials) if m in views), None)
    return _Open(g.victims, pool, g.until, float(g.idle)) if pool is not None else None


def choose_lends(
    waiting: Sequence[JobView],
    running: Sequence[tuple[Any, JobView]],
    sus: Suspensions,
    rules: SuspendRules,
    now: float,
    memory: int,
) -> list[Lend]:
    """The lends for the trials in `waiting` (queued, not started by the plan); `memory`: bytes free after the
    plan's starts."""
    views = {job.backend_id: view for job, view in running}
    groups = [o for o in (_open(g, views) for g in sus.groups) if o is not None and o.idle > 0]
    free = [
        _victim(job, view, sus)
        for job, view in running
        if job.backend_id in sus.suspendable and job.backend_id not in sus.frozen and job.backend_id not in sus.lent
    ]
    out: list[Lend] = []
    for view in sorted(waiting, key=lambda v: (v.queued_at, v.id)):
        if not eligible_trial(view, rules, now) or view.memory_bytes > memory:
            continue
        lend = _join(view, groups, now) or _suspend(view, free, groups, rules, now)
        if lend is not None:
            out.append(lend)
            memory -= view.memory_bytes
    return out


def _join(view: JobView, groups: list[_Open], now: float) -> Lend | None:
    for g in groups:
        if g.pool == view.pool and now + view.walltime_s <= g.until:
            if lend_parts(view.cpus, (Part(g.pool, g.idle, 0, 0),)) is not None:
                g.idle -= view.cpus
                return Lend(view.id, g.victims, int(view.cpus), g.until)
    return None


def _suspend(view: JobView, free: list[Victim], groups: list[_Open], rules: SuspendRules, now: float) -> Lend | None:
    chosen = choose_victims(view.cpus, view.pool, view.walltime_s, free, rules, now)
    if not chosen:
        return None
    taken = {v.id for v in chosen}
    free[:] = [v for v in free if v.id not in taken]
    victims = tuple(v.id for v in chosen)
    until = now + view.walltime_s
    groups.append(_Open(victims, view.pool, until, sum(v.cpus for v in chosen) - view.cpus))
    return Lend(view.id, victims, int(view.cpus), until)
