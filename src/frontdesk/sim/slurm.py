"""A model of Slurm's scheduling on a processor-pool machine: what a job submitted through frontdesk meets.

On Slurm, frontdesk's `plan()` never runs: Slurm's own schedulers decide, and frontdesk only steers them
(partition, QOS, `--nice`). This replays that, so a claim about a Slurm deployment is a simulated claim:

- **Priority** (priority/multifactor with only the age factor weighted, plus nice): `age_weight × min(wait,
  max_age) / max_age − nice`; ties go to the earlier submission. `age_weight = 0` is priority/basic (FIFO).
  With `steer`, each job's nice is the one frontdesk's Slurm backend sets (`9999 − slurm_priority`: agent
  and trial jobs enter high, hpc low; fairshare taken as equal for everyone).
- **Main scheduler** (at every submission and end): jobs in priority order start while they fit; the first
  that does not fit stops it (Slurm then skips the rest of the partition).
- **Backfill** (sched/backfill, every `bf_interval` seconds after something changed): the first
  `bf_max_job_test` jobs in priority order each get the earliest start in an availability profile built from
  the running jobs' expected ends (start + time limit); times are rounded up to `bf_resolution` (a job's
  length too); a job whose earliest start is now starts, one whose start lies within `bf_window` gets a
  reservation later jobs must not delay, and one beyond the window is skipped (no reservation). So every
  tested job is protected (conservative backfill up to `bf_max_job_test`), not only the head.

Defaults are slurm.conf's: bf_interval 30 s, bf_resolution 60 s, bf_window 1 day, bf_max_job_test 500,
PriorityMaxAge 7 days. Nothing here reads a clock or does I/O.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from frontdesk.policy.classify import classify
from frontdesk.policy.config import ClassifyConfig, PriorityConfig
from frontdesk.policy.priority import slurm_priority
from frontdesk.sim.engine import JobRecord, SimResult
from frontdesk.sim.textbook import Profile, ReplayState
from frontdesk.sim.workload import Workload

__all__ = ["SlurmModel", "frontdesk_nice", "replay_slurm"]


@dataclass(frozen=True)
class SlurmModel:
    """slurm.conf's scheduling parameters (SchedulerParameters bf_*, PriorityWeightAge, PriorityMaxAge)."""

    bf_interval: float = 30.0
    """Seconds between backfill passes; 0 runs one after every event (for hand-checked cases)."""
    bf_resolution: float = 60.0
    bf_window: float = 86_400.0
    bf_max_job_test: int = 500
    age_weight: float = 1000.0
    max_age: float = 7 * 86_400.0
    steer: bool = False
    """frontdesk's Slurm backend sets each job's nice from its class."""


def frontdesk_nice(job_class: str, trial: bool, cfg: PriorityConfig) -> int:
    """The `--nice` frontdesk's Slurm backend gives a job (backends.slurm.render.slurm_nice of its priority)."""
    return max(0, 9999 - slurm_priority(job_class, trial, 1.0, cfg))


class _Slurm:
    def __init__(self, wl: Workload, procs: int, model: SlurmModel, nice: list[int]) -> None:
        self.st = ReplayState(wl, procs)
        self.m = model
        self.nice = nice
        self.by_nice: dict[int, list[int]] = {}
        """nice -> its queued jobs in queue order"""
        self.upto = -1
        """the last job index filed by nice"""

    def _ceil(self, t: float) -> float:
        res = self.m.bf_resolution
        return math.ceil(t / res - 1e-9) * res if res > 0 else t

    def order(self, now: float) -> Iterator[int]:
        """The queue in Slurm's priority order at `now`, lazily: the main scheduler reads only its first jobs.

        A job's priority falls with its submission time among jobs of equal nice (ages are capped alike, and
        ties go to the earlier submission), so each nice value's queued jobs are in priority order already (in
        queue order): merging them is the sort."""
        self._sync()
        if self.m.age_weight < 0:  # priority then rises with the wait: sort
            return iter(sorted(self.st.queue, key=self._prio(now)))
        lists = list(self.by_nice.values())
        if len(lists) == 1:
            return iter(lists[0])
        return heapq.merge(*lists, key=self._prio(now))

    def _prio(self, now: float) -> Callable[[int], tuple[float, int]]:
        jobs, m = self.st.jobs, self.m

        def prio(i: int) -> tuple[float, int]:
            age = min(now - jobs[i].submit, m.max_age) / m.max_age if m.max_age else 0.0
            return (-(m.age_weight * age - self.nice[i]), i)

        return prio

    def _sync(self) -> None:
        """File the arrivals since the last pass by nice (they are at the queue's end: indices grow)."""
        q = self.st.queue
        k = len(q)
        while k > 0 and q[k - 1] > self.upto:
            k -= 1
        for i in q[k:]:
            self.by_nice.setdefault(self.nice[i], []).append(i)
        if k < len(q):
            self.upto = q[-1]

    def _started(self, started: list[int]) -> None:
        """Take started jobs off the queue and the lists by nice."""
        st = self.st
        for i in started:
            del st.queue[bisect.bisect_left(st.queue, i)]
            names = self.by_nice[self.nice[i]]
            del names[bisect.bisect_left(names, i)]
            if not names:
                del self.by_nice[self.nice[i]]

    def main(self, now: float) -> None:
        """Start in priority order until the first job that does not fit."""
        st = self.st
        started = []
        for i in self.order(now):
            if st.jobs[i].cpus > st.free:
                break
            st.start(i, now)
            started.append(i)
        self._started(started)

    def backfill(self, now: float) -> None:
        """One sched/backfill pass over the first bf_max_job_test jobs."""
        st, m = self.st, self.m
        if not st.queue or st.free == 0:
            return
        releases = sorted((self._ceil(end), st.jobs[i].cpus) for end, i in st.running)
        prof = Profile(st.free, now, releases)
        started: list[int] = []
        horizon = now + m.bf_window
        for i in list(itertools.islice(self.order(now), m.bf_max_job_test)):
            job = st.jobs[i]
            length = self._ceil(job.walltime) if m.bf_resolution > 0 else job.walltime
            k = prof.earliest(job.cpus, length)
            if k == 0 and job.cpus <= st.free:
                st.start(i, now)
                started.append(i)
            elif prof.times[k] >= horizon:
                continue
            prof.reserve(k, job.cpus, length)
        self._started(started)


def replay_slurm(
    wl: Workload, procs: int, model: SlurmModel | None = None, classify_cfg: ClassifyConfig | None = None
) -> SimResult:
    """Replay `wl` (sorted by submission, each job at most `procs` wide) under the Slurm model."""
    m = model or SlurmModel()
    cfg = classify_cfg or ClassifyConfig()
    jobs = wl.jobs
    if any(j.cpus > procs for j in jobs):
        wide = [j.id for j in jobs if j.cpus > procs]
        raise ValueError(f"{len(wide)} job(s) wider than the machine's {procs} processors (first: {wide[0]})")
    classes = [classify(j.declared, j.cpus, j.gpus, j.walltime, cfg)[0] for j in jobs]
    prio = PriorityConfig()
    nice = [frontdesk_nice(c, j.trial, prio) if m.steer else 0 for c, j in zip(classes, jobs, strict=True)]
    sl = _Slurm(wl, procs, m, nice)
    st = sl.st
    records = [JobRecord(j, c, j.trial, j.submit) for j, c in zip(jobs, classes, strict=True)]
    nxt, passes, busy, last = 0, 0, 0.0, 0.0
    pending_bf: float | None = None
    """When the next backfill pass runs (something changed since the last one)."""
    while nxt < len(jobs) or st.ends:
        now = min(
            jobs[nxt].submit if nxt < len(jobs) else math.inf,
            st.ends[0][0] if st.ends else math.inf,
            pending_bf if pending_bf is not None and st.queue else math.inf,
        )
        changed = False
        while st.ends and st.ends[0][0] == now:
            _, i = heapq.heappop(st.ends)
            st.finish(i)
            records[i].start, records[i].end = st.starts.pop(i), now
            busy += jobs[i].cpus * (now - records[i].start)  # type: ignore[operator]
            changed = True
        while nxt < len(jobs) and jobs[nxt].submit == now:
            st.queue.append(nxt)
            nxt += 1
            changed = True
        if changed and st.queue and st.free:
            passes += 1
            sl.main(now)
        ran = pending_bf is not None and now >= pending_bf
        if ran:
            pending_bf = None
        elif changed and pending_bf is None:
            iv = m.bf_interval
            ran = iv <= 0
            pending_bf = None if ran else (math.floor(now / iv) + 1) * iv
        if ran:
            passes += 1
            sl.backfill(now)
        if not st.queue:
            pending_bf = None
        last = now
    return SimResult("slurm", wl.name, records, (wl.start, last), 0.0, busy, 0, procs, passes=passes)
