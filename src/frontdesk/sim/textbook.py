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
from dataclasses import dataclass
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
        """Jobs ended so far."""
        self.early = 0
        """Jobs that ended before their requested time (a conservative plan is kept only while none does)."""
        self.widths: _Widths | None = None
        """EASY's queue by width (see `_easy`)."""
        self.plan: _Plan | None = None
        """Conservative's last walk: while no job ends early, it is carried on (see `_conservative`)."""

    def start(self, i: int, now: float) -> None:
        job = self.jobs[i]
        self.free -= job.cpus
        self.starts[i] = now
        bisect.insort(self.running, (now + job.walltime, i))
        heapq.heappush(self.ends, (now + min(job.runtime, job.walltime), i))

    def finish(self, i: int) -> None:
        job = self.jobs[i]
        self.ended += 1
        self.early += job.runtime < job.walltime  # else it ends at its expected end, as every profile assumed
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
    w = st.widths
    if w is None:
        w = st.widths = _Widths()
    w.sync(st)
    k = 0  # _fcfs, with the width index kept
    while k < len(st.queue) and st.jobs[st.queue[k]].cpus <= st.free:
        w.remove(st.queue[k], st.jobs[st.queue[k]].cpus)
        st.start(st.queue[k], now)
        k += 1
    del st.queue[:k]
    if not st.queue or st.free == 0:
        return
    jobs = st.jobs
    head = st.queue[0]
    shadow, extra = _shadow(st, jobs[head].cpus)
    if 0 in w.lists:  # a job asking no processor fits even when none is free: walk every job
        _easy_walk(st, w, now, shadow, extra)
        return
    # Backfill walks the queue in order, but only jobs that fit in the free processors can start, and those
    # only shrink: so it reads, merged in queue order, the queued jobs of each width that still fits.
    heap = []
    for width in w.widths[: bisect.bisect_right(w.widths, st.free)]:
        names = w.lists[width]
        pos = 1 if names[0] == head else 0
        if pos < len(names):
            heap.append((names[pos], pos, width))
    heapq.heapify(heap)
    started = []
    while heap:
        i, pos, width = heap[0]
        if width > st.free:  # no job of this width fits any more
            heapq.heappop(heap)
            continue
        if now + jobs[i].walltime <= shadow:
            started.append(i)
            st.start(i, now)
        elif width <= extra:
            extra -= width
            started.append(i)
            st.start(i, now)
        names = w.lists[width]
        if pos + 1 < len(names):
            heapq.heapreplace(heap, (names[pos + 1], pos + 1, width))
        else:
            heapq.heappop(heap)
    for i in started:
        w.remove(i, jobs[i].cpus)
        del st.queue[bisect.bisect_left(st.queue, i)]


def _easy_walk(st: ReplayState, w: _Widths, now: float, shadow: float, extra: int) -> None:
    """EASY's backfill as written: every queued job after the head, in order, until no processor is free."""
    jobs = st.jobs
    kept = [st.queue[0]]
    for k in range(1, len(st.queue)):
        i = st.queue[k]
        job = jobs[i]
        if job.cpus <= st.free:
            if now + job.walltime <= shadow:
                st.start(i, now)
                w.remove(i, job.cpus)
                continue
            if job.cpus <= extra:
                extra -= job.cpus
                st.start(i, now)
                w.remove(i, job.cpus)
                continue
        kept.append(i)
        if st.free == 0:
            kept.extend(st.queue[k + 1 :])
            break
    st.queue = kept


class _Widths:
    """EASY's queue by width: width -> its queued jobs in queue order (job indices: the queue is sorted)."""

    def __init__(self) -> None:
        self.lists: dict[int, list[int]] = {}
        self.widths: list[int] = []
        """the widths with queued jobs, ascending"""
        self.upto = -1
        """the last job index filed"""

    def sync(self, st: ReplayState) -> None:
        """File the arrivals since the last pass (at the queue's end: indices grow)."""
        q = st.queue
        k = len(q)
        while k > 0 and q[k - 1] > self.upto:
            k -= 1
        for i in q[k:]:
            width = st.jobs[i].cpus
            names = self.lists.get(width)
            if names is None:
                self.lists[width] = [i]
                bisect.insort(self.widths, width)
            else:
                names.append(i)
        if k < len(q):
            self.upto = q[-1]

    def remove(self, i: int, width: int) -> None:
        names = self.lists[width]
        del names[bisect.bisect_left(names, i)]
        if not names:
            del self.lists[width]
            del self.widths[bisect.bisect_left(self.widths, width)]


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


@dataclass
class _Plan:
    """Conservative's last walk: the profile with its reservations, and the start time reserved for each of
    the first `len(at)` queued jobs (the walked ones), in order."""

    ended: int
    early: int
    prof: Profile
    at: list[float]


def _conservative(st: ReplayState, now: float) -> None:
    queued = len(st.queue)
    _fcfs(st, now)
    started = queued - len(st.queue)
    plan, st.plan = st.plan, None
    if plan is not None and (plan.early != st.early or (started and plan.ended == st.ended)):
        plan = None  # a job ended early, or one started with no end since: rebuild
    if not st.queue or st.free == 0:
        st.plan = plan if plan is not None and plan.ended == st.ended else None  # nothing walked: still the walk
        return
    jobs = st.jobs
    # While no job ends early, the rebuilt profile is the last one less its breakpoints before `now` (every
    # other breakpoint lies after `now`; a job started since holds what its reservation held; a job that ended
    # at its expected end released what the profile released then), and a walk over the same queue takes the
    # same steps: so the walk is carried on (`_carry`: the walked jobs reserved at `now` start), then extended
    # with the jobs after it.
    carried = None if plan is None else _carry(st, plan, started, now)
    if carried is _BROKE:
        return
    if isinstance(carried, tuple):
        prof, kept, at, rest = carried
    else:
        prof, kept, at = Profile(st.free, now, ((end, jobs[i].cpus) for end, i in st.running)), [], []
        rest = st.queue
    suffix_min = [0] * (len(rest) + 1)
    suffix_min[-1] = st.procs + 1
    for k in range(len(rest) - 1, -1, -1):
        suffix_min[k] = min(suffix_min[k + 1], jobs[rest[k]].cpus)
    for k, i in enumerate(rest):
        if prof.free[0] < suffix_min[k]:  # nothing left can start now: the rest keep their order
            st.plan = _Plan(st.ended, st.early, prof, at)
            kept.extend(rest[k:])
            break
        job = jobs[i]
        k_at = prof.earliest(job.cpus, job.walltime)
        prof.reserve(k_at, job.cpus, job.walltime)
        if k_at == 0:
            st.start(i, now)
        else:
            kept.append(i)
            at.append(prof.times[k_at])
    else:
        st.plan = _Plan(st.ended, st.early, prof, at)
    st.queue = kept


_BROKE = object()
"""`_carry`'s answer when the walk stopped inside the carried part (the queue is set; no plan is kept)."""


def _carry(
    st: ReplayState, plan: _Plan, started: int, now: float
) -> tuple[Profile, list[int], list[float], list[int]] | object | None:
    """The last walk carried on to `now` (no job ended early since): its profile from `now`, the walked jobs
    still queued and their reserved starts, and the queued jobs after them. The walked jobs reserved at `now`
    start, in order, as a rebuilt walk starts them. None: rebuild instead."""
    prof, at = plan.prof, plan.at
    if plan.ended == st.ended:  # only arrivals since: the walk resumes
        prof.times[0] = now
        return prof, st.queue[: len(at)], at, st.queue[len(at) :]
    # _fcfs started the first `started` queued jobs: a rebuilt walk reserves them at `now` (checked)
    if started > len(at) or any(t != now for t in at[:started]):
        return None
    at = at[started:]
    times, free = prof.times, prof.free
    m = bisect.bisect_right(times, now) - 1  # the last breakpoint at or before `now` becomes the first
    if m < 0:
        return None
    del times[:m], free[:m]
    times[0] = now
    jobs, queue = st.jobs, st.queue
    walked = len(at)
    if free[0] != st.free - sum(jobs[queue[k]].cpus for k in range(walked) if at[k] == now):
        return None  # not the profile a rebuild makes (never seen: kept as a guard)
    # a rebuilt walk stops where nothing left can start now: the least width from each walked job on
    least = min((jobs[i].cpus for i in queue[walked:]), default=st.procs + 1)
    mins = [0] * walked
    for k in range(walked - 1, -1, -1):
        least = min(least, jobs[queue[k]].cpus)
        mins[k] = least
    kept: list[int] = []
    kept_at: list[float] = []
    for k in range(walked):
        if st.free < mins[k]:  # the rebuilt walk stops here (its profile lacks the later reservations)
            st.queue = kept + queue[k:]
            return _BROKE
        i = queue[k]
        if at[k] == now:
            st.start(i, now)
        else:
            kept.append(i)
            kept_at.append(at[k])
    return prof, kept, kept_at, queue[walked:]


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
