"""The embedded backend's side of suspension: the groups (lending.py) and the attempt files that carry them.

A lend suspends its victims by writing their `suspend` request (files.py; the shepherd freezes the job,
backends/freezing.py) before the trial starts; a group's last trial ending withdraws the requests. After a
restart the groups are rebuilt from the running trials' launch files, and a job suspended for trials that are
all over resumes (never left frozen: its shepherd also thaws it on its own past the group's end).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from frontdesk.backends.freezing import SUSPEND_FILE, SUSPENDED_FILE
from frontdesk.backends.gpushare import Hold
from frontdesk.backends.local.files import AttemptFiles
from frontdesk.backends.local.lending import Lend, Lending, Suspensions
from frontdesk.backends.local.scheduling import QueuedJob
from frontdesk.procid import ProcId

__all__ = ["LEND_MARGIN_S", "Running", "Suspending"]

LEND_MARGIN_S = 30.0
"""A victim's shepherd thaws it on its own this long after its group's expected end (a gateway that died)."""


@dataclass
class Running:
    """A started attempt: its queue entry, its devices, its shepherd."""

    job: QueuedJob
    holds: tuple[Hold, ...]
    pid: int
    suspendable: bool = False
    """Launched with a freezer: a trial may suspend it."""
    proc: ProcId | None = None
    """The shepherd as its shepherd.pid names it, for one adopted after a restart (not our child: its pid may be
    reused once it ends); None for a shepherd this gateway started."""


class Suspending:
    """See the module docstring."""

    def __init__(self, files: AttemptFiles) -> None:
        self.files = files
        self.lending = Lending()

    def cpus_held(self, running: Mapping[str, Running]) -> int:
        """Cores in use: a trial on lent cores holds none of its own; a suspended job's cores are its group's,
        held until the group's last trial ends (also when the job itself ended meanwhile)."""
        lent, frozen = self.lending.of_trial, self.lending.of_victim
        own = sum(r.job.cpus for b, r in running.items() if b not in lent and b not in frozen)
        return own + self.lending.held_cpus()

    def view(self, running: Mapping[str, Running]) -> Suspensions:
        """What a picker sees."""
        return self.lending.view(frozenset(b for b, r in running.items() if r.suspendable))

    def holds(self, lend: Lend, queue: Mapping[str, QueuedJob], running: Mapping[str, Running]) -> bool:
        """Whether a picker's lend still holds: a queued cores-only job; victims running, suspendable and in no
        other group (or all of one group, joined, with enough idle cores)."""
        job = queue.get(lend.trial)
        if job is None or job.gpus or not lend.victims or lend.cpus != job.cpus:
            return False
        group = self.lending.of_victim.get(lend.victims[0])
        if group is not None:  # a join (a victim may have ended meanwhile: its cores are still the group's)
            return group.victims == lend.victims and group.idle >= lend.cpus
        if any(v not in running or not running[v].suspendable for v in lend.victims):
            return False
        return not any(v in self.lending.of_victim for v in lend.victims)

    def suspend_for(self, lend: Lend, running: Mapping[str, Running]) -> dict[str, Any] | None:
        """Record the lend and ask its new victims to freeze (or all of them to stay frozen longer: an extended
        group); the trial's `lent` record, None when a request could not be written (the caller then calls
        `ended(trial)`)."""
        cpus = {v: running[v].job.cpus for v in lend.victims}
        group, asks = self.lending.add(lend, cpus, time.time())
        try:
            for victim in asks:
                self.files.ask_suspend(victim, group.until + LEND_MARGIN_S, lend.trial)
        except OSError:
            return None
        return group.record()

    def ended(self, bid: str) -> None:
        """Attempt `bid` is over (or never started): a group's last trial resumes its victims."""
        for victim in self.lending.ended(bid, time.time()):
            self.files.ask_resume(victim)

    def recover(self, bid: str, launch: Mapping[str, Any], cpus: int) -> bool:
        """A running attempt after a restart: its group if it is a trial on lent cores, its suspensions so far;
        whether a trial may suspend it."""
        lent = launch.get("lent")
        if isinstance(lent, dict):
            self.lending.restore(bid, lent, cpus)
        paused = self.files.read(bid, SUSPENDED_FILE)
        if paused and paused.get("count"):
            resumed = paused.get("resumed_at")
            total = float(paused.get("suspended_s") or 0.0)
            self.lending.history[bid] = (total, float(resumed) if isinstance(resumed, int | float) else None)
        return bool(launch.get("suspendable"))

    def resume_orphans(self, running: Mapping[str, Running]) -> None:
        """After a restart, a job suspended for trials that are all over (or never started) resumes now."""
        for group in self.lending.groups.values():
            group.gone |= {v for v in group.victims if v not in running}
        for bid in self.lending.orphans(time.time()):
            self.files.ask_resume(bid)
        for bid in running:
            if bid not in self.lending.of_victim and self.files.exists(bid, SUSPEND_FILE):
                self.files.ask_resume(bid)
