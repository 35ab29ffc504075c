"""Textbook baselines on a processor-pool machine: FCFS, EASY and conservative backfill.

These count processors only (the model of the Parallel Workloads Archive literature): a job fits when enough
processors are free, wherever they are.

- FCFS: start jobs in submission order; stop at the first that does not fit.
- EASY (Lifka 1995; Mu'alem & Feitelson 2001): the blocked head job gets a reservation at its shadow time (when
  enough processors will be free, by the running jobs' requested times); the processors left over at that time
  are the "extra" ones. Any later job that fits now starts if it ends (by its requested time) before the shadow
  time, or uses no more than the extra processors: it never delays the head.
- Conservative: every queued job, in submission order, gets the earliest reservation that fits the
  availability profile without moving any earlier job's reservation; the jobs whose reservation is now start.
  The profile is rebuilt at every event, so a job that ends early moves later reservations forward.

Nothing here reads a clock or does I/O; the clock jumps from event to event.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Iterable
from enum import StrEnum

from frontdesk.policy.classify import classify
from frontdesk.policy.config import ClassifyConfig
from frontdesk.sim.engine import JobRecord, SimResult
from frontdesk.sim.workload import Workload

__all__ = ["Profile", "ReplayState", "Rule", "replay"]


class Rule(StrEnum):
    """The textbook scheduling rules."""

    FCFS = "fcfs"
    EASY = "easy-textbook"
    CONSERVATIVE = "conservative"


class ReplayState:
    """The machine and the queue during a replay (indices into the workload's job list)."""

    def __init__(self, wl: Workload, procs: int) -> None:
        self.jobs = wl.jobs
        self.procs = procs
        self.free = procs
        self.queue: list[int] = []
        self.running: list[tuple[float, int]] = []
        """(expected end = start + requested time, job index), sorted."""
        self.starts: dict[int, float] = {}
        self.ends: list[tuple[float, int]] = []
        """(actual end, job index): a heap."""
        self.ended = 0
        """Jobs ended so far (a conservative plan is kept only while none ends)."""
        self.plan: tuple[int, Profile, int] | None = None
        """Conservative's last walk: (`ended` then, the profile with its reservations, how many queued jobs it
        reserved, in order): while no job ends, arrivals only extend it (see `_conservative`)."""

    def start(self, i: int, now: float) -> None:
        job = self.jobs[i]
        self.free -= job.cpus
        self.starts[i] = now
        bisect.insort(self.running, (now + job.walltime, i))
        heapq.heappush(self.ends, (now + min(job.runtime, job.walltime), i))

    def finish(self, i: int) -> None:
        job = self.jobs[i]
        self.ended += 1
        self.free += job.cpus
        del self.running[bisect.bisect_left(self.running, (self.starts[i] + job.walltime, i))]


def _fcfs(st: ReplayState, now: float) -> None:
    k = 0
    while k < len(st.queue) and st.jobs[st.queue[k]].cpus <= st.free:
        st.start(st.queue[k], now)
        k += 1
    del st.queue[:k]


def _shadow(st: ReplayState, need: int) -> tuple[float, int]:
    """When `need` processors will be free (by requested times), and how many more than `need` are free then
    (every job expected to end at that time has ended then, not only the first that makes `need`)."""
    avail = st.free
    running = st.running
    for k, (end, i) in enumerate(running):
        avail += st.jobs[i].cpus
        if avail >= need and (k + 1 == len(running) or running[k + 1][0] > end):
            return end, avail - need
    raise AssertionError("a queued job is wider than the machine")


def _easy(st: ReplayState, now: float) -> None:
    _fcfs(st, now)
    if not st.queue or st.free == 0:
        return
    jobs = st.jobs
    shadow, extra = _shadow(st, jobs[st.queue[0]].cpus)
    kept = [st.queue[0]]
    for k in range(1, len(st.queue)):
        i = st.queue[k]
        job = jobs[i]
        if job.cpus <= st.free:
            if now + job.walltime <= shadow:
                st.start(i, now)
                continue
            if job.cpus <= extra:
                extra -= job.cpus
                st.start(i, now)
                continue
        kept.append(i)
        if st.free == 0:
            kept.extend(st.queue[k + 1 :])
            break
    st.queue = kept


class Profile:
    """Free processors over time: free[k] holds from times[k] until times[k + 1] (the last forever)."""

    def __init__(self, free: int, now: float, releases: Iterable[tuple[float, int]]) -> None:
        """`free` processors now, plus (expected end, processors) releases in time order."""
        self.times = [now]
        self.free = [free]
        for end, cpus in releases:
            if end > self.times[-1]:
                self.times.append(end)
                self.free.append(self.free[-1])
            self.free[-1] += cpus

    def earliest(self, need: int, length: float) -> int:
        """The index of the earliest breakpoint from which `need` processors stay free for `length` seconds."""
        times, free = self.times, self.free
        n = len(times)
        k = 0
        while True:
            while free[k] < need:
                k += 1
            end = times[k] + length
            m = k + 1
            while m < n and free[m] >= need and times[m] < end:
                m += 1
            if m == n or times[m] >= end:
                return k
            k = m + 1

    def reserve(self, k: int, need: int, length: float) -> None:
        """Take `need` processors from times[k] for `length` seconds."""
        end = self.times[k] + length
        m = bisect.bisect_left(self.times, end, k)
        if m == len(self.times) or self.times[m] != end:
            self.times.insert(m, end)
            self.free.insert(m, self.free[m - 1])
        self.free[k:m] = [f - need for f in self.free[k:m]]


def _conservative(st: ReplayState, now: float) -> None:
    queued = len(st.queue)
    _fcfs(st, now)
    plan, st.plan = st.plan, None
    if plan is not None and (plan[0] != st.ended or len(st.queue) != queued):
        plan = None  # a job ended or started since: rebuild
    if not st.queue or st.free == 0:
        st.plan = plan  # nothing walked: still the walk so far
        return
    jobs = st.jobs
    # While no job ends, the rebuilt profile is the last one (every breakpoint but the first lies after `now`; a
    # job started then holds what its reservation held) and the walk over the same queue takes the same steps:
    # so it resumes where the last one stopped, with the arrivals after it.
    if plan is None:
        prof, walked = Profile(st.free, now, ((end, jobs[i].cpus) for end, i in st.running)), 0
    else:
        prof, walked = plan[1], plan[2]
        prof.times[0] = now
    rest = st.queue[walked:]
    suffix_min = [0] * (len(rest) + 1)
    suffix_min[-1] = st.procs + 1
    for k in range(len(rest) - 1, -1, -1):
        suffix_min[k] = min(suffix_min[k + 1], jobs[rest[k]].cpus)
    kept = st.queue[:walked]
    for k, i in enumerate(rest):
        if prof.free[0] < suffix_min[k]:  # nothing left can start now: the rest keep their order
            st.plan = (st.ended, prof, len(kept))
            kept.extend(rest[k:])
            break
        job = jobs[i]
        at = prof.earliest(job.cpus, job.walltime)
        prof.reserve(at, job.cpus, job.walltime)
        if at == 0:
            st.start(i, now)
        else:
            kept.append(i)
    else:
        st.plan = (st.ended, prof, len(kept))
    st.queue = kept


_RULES: dict[Rule, Callable[[ReplayState, float], None]] = {
    Rule.FCFS: _fcfs,
    Rule.EASY: _easy,
    Rule.CONSERVATIVE: _conservative,
}


def replay(wl: Workload, procs: int, rule: Rule, classify_cfg: ClassifyConfig | None = None) -> SimResult:
    """Replay `wl` (jobs sorted by submission, each at most `procs` wide) on `procs` processors under `rule`."""
    cfg = classify_cfg or ClassifyConfig()
    st = ReplayState(wl, procs)
    schedule = _RULES[rule]
    jobs = wl.jobs
    records = [JobRecord(j, classify(j.declared, j.cpus, j.gpus, j.walltime, cfg)[0], False, j.submit) for j in jobs]
    wide = [j.id for j in jobs if j.cpus > procs]
    if wide:
        raise ValueError(f"{len(wide)} job(s) wider than the machine's {procs} processors (first: {wide[0]})")
    nxt, passes, busy, last = 0, 0, 0.0, 0.0
    while nxt < len(jobs) or st.ends:
        now = min(jobs[nxt].submit if nxt < len(jobs) else float("inf"), st.ends[0][0] if st.ends else float("inf"))
        while st.ends and st.ends[0][0] == now:
            _, i = heapq.heappop(st.ends)
            st.finish(i)
            records[i].start, records[i].end = st.starts.pop(i), now
            busy += jobs[i].cpus * (now - records[i].start)  # type: ignore[operator]
        while nxt < len(jobs) and jobs[nxt].submit == now:
            st.queue.append(nxt)
            nxt += 1
        if st.queue and st.free:
            passes += 1
            schedule(st, now)
        last = now
    return SimResult(rule.value, wl.name, records, (wl.start, last), 0.0, busy, 0, procs, passes=passes)
