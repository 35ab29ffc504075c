"""Preemption by suspension in the simulator: a blocked short trial suspends running batch jobs
(`policy/suspend.py` chooses which), runs on their cores, and they resume when it ends.

How it is modelled (docs/policy.md, "Preemption by suspension"):
- A suspended job keeps its allocation in the cluster state: its cores are lent to the trials it was suspended
  for (their placements hold no cores of their own) and sit idle otherwise; nobody else may take them.
- Its remaining run time is unchanged: it resumes when the last trial of its group ends and ends that much
  later; its expected end (what reservations see) shifts by the suspension's length (expected while
  suspended, actual once resumed). The record keeps each pause, so waits and slowdowns count them.
- Trials of the same pool join a group's idle lent cores while their time limit ends within the group's
  expected end (a flood of trials shares one suspension); a group never lasts past its first trials' limit,
  unless `SuspendRules.extend` lets a later trial make it last longer (every victim's share allowing).
- With `SuspendRules.fill`, queued jobs (first come) that end by the group's expected end run on lent cores no
  trial uses; they hold no cores of their own either, and the victims resume when the last guest ends.
Nothing here reads a clock or does I/O.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from frontdesk.policy.model import JobView, Part, Placement, RunningView
from frontdesk.policy.suspend import (
    SuspendRules,
    Victim,
    choose_victims,
    eligible_trial,
    fills,
    lend_parts,
    may_suspend,
)
from frontdesk.sim.engine import END, WAKE, _Running, _Sim

__all__ = ["Suspender"]


@dataclass
class _Group:
    """Jobs suspended together and the trials running on their cores."""

    pool: str
    at: float
    until: float
    """The expected end: the latest time limit of its trials (no trial joins past it)."""
    victims: list[str]
    lendable: list[Part]
    """Cores the victims hold that no trial uses now."""
    trials: dict[str, tuple[Part, ...]] = field(default_factory=dict)


@dataclass
class _Paused:
    group: _Group
    remaining: float
    """Seconds of run left when suspended."""
    expected_end: float
    """The expected end before this suspension."""


class Suspender:
    """The engine's hook: told of arrivals and ends, it suspends for blocked trials after each pass."""

    def __init__(self, sim: _Sim, rules: SuspendRules) -> None:
        self.sim, self.rules = sim, rules
        self.pending: dict[str, None] = {}
        """Queued trials that may suspend, in arrival order."""
        self.paused: dict[str, _Paused] = {}
        self.groups: list[_Group] = []
        self.in_group: dict[str, _Group] = {}
        """Running trials placed on lent cores → their group."""
        self.history: dict[str, tuple[float, float]] = {}
        """job → (suspended in total, when it last resumed)."""
        self.rests: list[float] = []
        """When resumed jobs may be suspended again (a heap)."""
        self.woken = -1.0

    def arrived(self, view: JobView) -> None:
        """A job was queued."""
        if eligible_trial(view, self.rules, view.queued_at + self.rules.grace_s):
            self.pending[view.id] = None
            if self.rules.grace_s:  # a pass then, in case nothing else happens
                self._wake(view.queued_at + self.rules.grace_s)

    def after_pass(self, now: float) -> None:
        """Start, by suspension, the pending trials the pass did not start."""
        queue = self.sim.queue
        for job_id in list(self.pending):
            if job_id not in queue:
                del self.pending[job_id]
                continue
            view = queue[job_id][1]
            if now - view.queued_at < self.rules.grace_s:
                continue
            if self._join(view, now) or self._suspend_for(view, now):
                del self.pending[job_id]
        if self.rules.fill:
            for g in self.groups:
                if g.lendable:
                    self._fill(g, now)
        rests = self.rests
        while rests and rests[0] <= now:
            heapq.heappop(rests)
        if self.pending and rests and rests[0] != self.woken:  # a pass when a job may be suspended again
            self.woken = rests[0]
            self._wake(self.woken)

    def ended(self, job_id: str, now: float) -> None:
        """A job ended: a trial on lent cores gives them back; the last one of its group resumes the victims."""
        group = self.in_group.pop(job_id, None)
        if group is None:
            return
        group.lendable.extend(group.trials.pop(job_id))
        if group.trials:
            return
        self.groups.remove(group)
        for vid in group.victims:
            self._resume(vid, now)

    def _join(self, view: JobView, now: float) -> bool:
        for g in self.groups:
            if g.pool != view.pool:
                continue
            parts = lend_parts(view.cpus, g.lendable)
            if parts is not None and (now + view.walltime_s <= g.until or self._extend(g, now + view.walltime_s, now)):
                self._lend(g, parts)
                self._start(view, parts, g, now)
                return True
        return False

    def _extend(self, g: _Group, until: float, now: float) -> bool:
        """Make the group last until `until` if every victim's share allows it (`SuspendRules.extend`)."""
        if not self.rules.extend:
            return False
        running = self.sim.running
        if not all(may_suspend(self._victim(running[v]), g.pool, until - g.at, self.rules, now) for v in g.victims):
            return False
        for vid in g.victims:
            rv = running[vid].runtime_view
            running[vid].runtime_view = _shifted(rv, rv.expected_end + (until - g.until))
        g.until = until
        return True

    def _fill(self, g: _Group, now: float) -> None:
        """Start queued jobs on the group's idle lent cores that end by its expected end (`SuspendRules.fill`)."""
        queued = [view for _, view in self.sim.queue.values()]
        for view in fills(queued, g.pool, sum(p.cpus for p in g.lendable), g.until, self.rules, now):
            parts = lend_parts(view.cpus, g.lendable)
            assert parts is not None  # fills() counted the idle cores
            self._lend(g, parts)
            self._start(view, parts, g, now)
            self.pending.pop(view.id, None)

    def _suspend_for(self, view: JobView, now: float) -> bool:
        length = view.walltime_s
        candidates = [self._victim(r) for r in self.sim.running.values() if self._choosable(r)]
        chosen = choose_victims(view.cpus, view.pool, length, candidates, self.rules, now)
        if not chosen:
            return False
        lendable = [p for v in chosen for p in v.parts]
        group = _Group(view.pool, now, now + length, [v.id for v in chosen], lendable)
        parts = lend_parts(view.cpus, lendable)
        assert parts is not None  # the victims hold at least view.cpus cores
        self._lend(group, parts)
        for v in chosen:
            self._pause(v.id, group, now)
        self.groups.append(group)
        self._start(view, parts, group, now)
        return True

    def _choosable(self, r: _Running) -> bool:
        return r.record.job.id not in self.paused and r.record.job.id not in self.in_group

    def _victim(self, r: _Running) -> Victim:
        total, resumed = self.history.get(r.record.job.id, (0.0, None))
        v = r.view
        return Victim(
            v.id,
            v.pool,
            r.placement.parts,
            r.start,
            v.walltime_s,
            total,
            resumed,
            v.trial,
            r.placement.exclusive,
            r.start - r.record.submit,
        )

    @staticmethod
    def _lend(group: _Group, parts: tuple[Part, ...]) -> None:
        """Take `parts` out of the group's idle lent cores (lend_parts took them node by node from the front)."""
        left = {p.node: p.cpus for p in parts}
        keep: list[Part] = []
        for p in group.lendable:
            take = min(p.cpus, left.get(p.node, 0.0))
            if take > 0:
                left[p.node] -= take
            if p.cpus - take > 0:
                keep.append(Part(p.node, p.cpus - take, 0, 0))
        group.lendable = keep

    def _pause(self, job_id: str, group: _Group, now: float) -> None:
        sim = self.sim
        run = sim.running[job_id]
        job = run.record.job
        end_at = run.start + min(job.runtime, job.walltime) + run.record.suspended
        sim.seq += 1
        run.token = sim.seq  # its END event is now stale; a new one comes at the resume
        rv = run.runtime_view
        self.paused[job_id] = _Paused(group, end_at - now, rv.expected_end)
        run.runtime_view = _shifted(rv, rv.expected_end + (group.until - now))
        run.record.preempted += 1

    def _resume(self, job_id: str, now: float) -> None:
        sim = self.sim
        p = self.paused.pop(job_id)
        run = sim.running[job_id]
        run.record.pauses += ((p.group.at, now),)
        total, _ = self.history.get(job_id, (0.0, 0.0))
        self.history[job_id] = (total + now - p.group.at, now)
        run.runtime_view = _shifted(run.runtime_view, p.expected_end + (now - p.group.at))
        sim.seq += 1
        run.token = sim.seq
        heapq.heappush(sim.heap, (now + p.remaining, END, run.token, (job_id, run.token)))
        if self.rules.rest_s:
            heapq.heappush(self.rests, now + self.rules.rest_s)

    def _wake(self, at: float) -> None:
        self.sim.seq += 1
        heapq.heappush(self.sim.heap, (at, WAKE, self.sim.seq, None))

    def _start(self, view: JobView, parts: tuple[Part, ...], group: _Group, now: float) -> None:
        """Start the trial on lent cores: its placement holds none of its own (the victims' allocation holds them)."""
        group.trials[view.id] = parts
        self.in_group[view.id] = group
        self.sim.start(Placement(view.id, ()), now)


def _shifted(rv: RunningView, expected_end: float) -> RunningView:
    return RunningView(rv.id, rv.parts, expected_end, rv.exclusive, rv.job_class, rv.trial)
