"""The discrete-event simulator: arrivals, starts, ends and reclaims on a cluster of nodes, through a policy.

Faster than real time: the clock jumps from event to event; one scheduling pass per instant that changed
something. Nothing here reads a clock or does I/O.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from frontdesk.policy.model import JobView, NodeView, Part, Placement, RunningView, apply
from frontdesk.policy.shapes import IndexedNodes
from frontdesk.policy.trial import Revocation
from frontdesk.sim.policies import SimPolicy
from frontdesk.sim.workload import SimJob, Workload

if TYPE_CHECKING:
    from frontdesk.sim.suspend import Suspender

__all__ = ["JobRecord", "SimResult", "simulate"]

ARRIVE, END, RECLAIM, WAKE = 0, 1, 2, 3
"""Event kinds (WAKE: only a pass, asked for by the suspension hook)."""


@dataclass
class JobRecord:
    """What happened to one job."""

    job: SimJob
    job_class: str
    trial: bool
    submit: float
    start: float | None = None
    end: float | None = None
    preempted: int = 0
    borrowed: bool = False
    free_at_submit: bool = False
    pauses: tuple[tuple[float, float], ...] = ()
    """(suspended at, resumed at) of each suspension (sim/suspend.py)."""

    @property
    def suspended(self) -> float:
        """Seconds spent suspended in all."""
        return sum(b - a for a, b in self.pauses)


@dataclass
class SimResult:
    """Records plus resource integrals over the measured window."""

    policy: str
    workload: str
    records: list[JobRecord]
    window: tuple[float, float]
    gpu_seconds: float
    cpu_seconds: float
    gpu_capacity: int
    cpu_capacity: int
    revocations: list[Revocation] = field(default_factory=list)
    passes: int = 0
    trace: list[tuple[float, float, float]] = field(default_factory=list)
    """(time, busy GPUs, busy cores) after each instant, when asked for."""


@dataclass
class _Running:
    record: JobRecord
    view: JobView
    placement: Placement
    runtime_view: RunningView
    start: float
    token: int
    gpus: int
    cpus: float
    """what `placement` holds in all (sums kept from the start: the release takes back the same figures)"""


def simulate(
    workload: Workload,
    nodes: list[NodeView],
    policy: SimPolicy,
    start_hour: float = 0.0,
    trace: bool = False,
    indexed: bool = True,
) -> SimResult:
    """Replay `workload` on `nodes` under `policy`; time 0 is `start_hour` o'clock. `indexed=False` keeps the
    nodes in a plain dict, so every placement scans them (the slower reference the index must agree with)."""
    sim = _Sim(workload, nodes, policy, start_hour, trace, indexed)
    sim.run()
    return sim.result()


class _Sim:
    """One replay's state: the event heap, the queue, what runs, and the busy-resource integrals."""

    def __init__(
        self,
        workload: Workload,
        nodes: list[NodeView],
        policy: SimPolicy,
        start_hour: float,
        trace: bool,
        indexed: bool = True,
    ) -> None:
        self.workload, self.nodes, self.policy, self.start_hour, self.trace = workload, nodes, policy, start_hour, trace
        copies = {n.name: n.copy() for n in nodes}
        self.state: dict[str, NodeView] = IndexedNodes(copies) if indexed else copies
        """The nodes, with free capacity indexed by shape (kept as jobs start and end)."""
        self.heap: list[tuple[float, int, int, object]] = [
            (job.submit, ARRIVE, seq, job) for seq, job in enumerate(workload.jobs)
        ]
        self.seq = len(self.heap)
        heapq.heapify(self.heap)
        self.queue: dict[str, tuple[SimJob, JobView]] = {}
        self.running: dict[str, _Running] = {}
        self.records: dict[str, JobRecord] = {}
        self.w0, self.w1 = workload.start, workload.end
        self.gpu_s = self.cpu_s = self.busy_g = self.busy_c = 0.0
        self.last = self.heap[0][0] if self.heap else 0.0
        self.passes = 0
        self.samples: list[tuple[float, float, float]] = []
        self.cpu_total = sum(n.cpus for n in nodes if not n.drained)
        self.gpu_total = sum(n.gpus for n in nodes if not n.drained)
        self.window: int | None = getattr(policy, "window", None)
        self.costs: list[tuple[float, str]] = []
        """(least cores, job id) of queued jobs: a heap, started ones dropped lazily."""
        self.asking_gpus = 0
        """Queued jobs asking GPUs (with none, the cost heap alone says whether a pass may start one)."""
        self.hook: Suspender | None = None
        if (rules := getattr(policy, "suspend", None)) is not None:
            from frontdesk.sim.suspend import Suspender

            self.hook = Suspender(self, rules)

    def integrate(self, t: float) -> None:
        a, b = max(self.last, self.w0), t if self.w1 is None else min(t, self.w1)
        if b > a:
            self.gpu_s += self.busy_g * (b - a)
            self.cpu_s += self.busy_c * (b - a)
        self.last = t

    def run(self) -> None:
        heap = self.heap
        while heap:
            now = heap[0][0]
            self.integrate(now)
            dirty = False
            while heap and heap[0][0] == now:
                _, kind, _, item = heapq.heappop(heap)
                if kind == ARRIVE:
                    assert isinstance(item, SimJob)
                    self.arrive(item, now)
                    dirty = True
                elif kind == WAKE:
                    dirty = True
                else:
                    assert isinstance(item, tuple)
                    dirty = self.release(kind, item, now) or dirty
            if dirty and self.queue:
                self.schedule(now)
                if self.hook is not None and self.queue:
                    self.hook.after_pass(now)
            if self.trace:
                self.samples.append((now, self.busy_g, self.busy_c))

    def arrive(self, item: SimJob, now: float) -> None:
        view = self.policy.admit(item, now)
        rec = self.records.get(item.id) or JobRecord(item, view.job_class, view.trial, now)
        rec.free_at_submit = not any(v.pool == view.pool for _, v in self.queue.values()) and self.policy.fits_now(
            view, self.state, (self.start_hour + now / 3600) % 24
        )
        self.records[item.id] = rec
        self.queue[item.id] = (item, view)
        heapq.heappush(self.costs, (_cost(view), item.id))
        self.asking_gpus += view.gpus > 0
        if self.hook is not None:
            self.hook.arrived(view)

    def release(self, kind: int, item: tuple[str, int], now: float) -> bool:
        """A run's end or reclaim; False for a stale event (the run it names is gone)."""
        job_id, token = item
        run = self.running.get(job_id)
        if run is None or run.token != token:
            return False
        del self.running[job_id]
        _apply(self.state, run.placement.parts, run.placement.exclusive, -1)
        self.busy_g -= run.gpus
        self.busy_c -= run.cpus
        if kind == END:
            run.record.end = now
            self.policy.finished(run.record.job, run.view, run.start, now)
            if self.hook is not None:
                self.hook.ended(job_id, now)
        else:  # reclaimed by the lending pool: requeued, or ended as preempted
            run.record.preempted += 1
            if _reclaim(self.policy, run.placement)[1] == "requeue":
                run.record.start = None
                self.queue[job_id] = (run.record.job, run.view)
                heapq.heappush(self.costs, (_cost(run.view), job_id))
                self.asking_gpus += run.view.gpus > 0
            else:
                run.record.end = now
        return True

    def schedule(self, now: float) -> None:
        """One pass, unless nothing queued could fit in all the free capacity (a pass would start nothing)."""
        costs, queue = self.costs, self.queue
        while costs[0][1] not in queue:  # lazily drop started jobs from the cost heap
            heapq.heappop(costs)
        free_c, free_g = self.cpu_total - self.busy_c, self.gpu_total - self.busy_g
        if costs[0][0] > free_c + 1e-6:
            return
        # a policy that only ever looks at the first `window` queued jobs gets only those
        views = [v for _, v in itertools.islice(queue.values(), self.window)]
        if (self.asking_gpus or len(views) < len(queue)) and not any(_may_fit(v, free_c, free_g) for v in views):
            return  # (else the cheapest queued job fits: checked above)
        hour = (self.start_hour + now / 3600) % 24
        self.passes += 1
        # the pass applies its placements to the state as it makes them (no planning copy to apply again)
        runs = [r.runtime_view for r in self.running.values()]
        started = self.policy.schedule(views, self.state, runs, now, hour, in_place=True)
        if started and isinstance(self.state, IndexedNodes):
            self.state.renew()  # what a reservation search kept during the pass is not reused after it
        for p in started:
            self.start(p, now, applied=True)

    def start(self, p: Placement, now: float, applied: bool = False) -> None:
        """Start a queued job on `p` (`applied`: the placement is in the state already)."""
        job, view = self.queue.pop(p.job_id)
        self.asking_gpus -= view.gpus > 0
        if not applied:
            _apply(self.state, p.parts, p.exclusive, 1)
        gpus, cpus = sum(x.gpus for x in p.parts), sum(x.cpus for x in p.parts)
        self.busy_g += gpus
        self.busy_c += cpus
        rec = self.records[job.id]
        rec.start = now
        rec.borrowed = p.borrowed_from is not None
        self.seq += 1
        seq = self.seq
        runtime = RunningView(job.id, p.parts, now + view.walltime_s, p.exclusive, view.job_class, view.trial)
        self.running[job.id] = _Running(rec, view, p, runtime, now, seq, gpus, cpus)
        heapq.heappush(self.heap, (now + min(job.runtime, job.walltime), END, seq, (job.id, seq)))
        if p.borrowed_from is not None:
            heapq.heappush(self.heap, (now + _reclaim(self.policy, p)[0], RECLAIM, seq, (job.id, seq)))

    def result(self) -> SimResult:
        end = self.w1 if self.w1 is not None else self.last
        return SimResult(
            self.policy.name,
            self.workload.name,
            [r for r in self.records.values() if r.submit >= self.w0],
            (self.w0, end),
            self.gpu_s,
            self.cpu_s,
            sum(n.gpus for n in self.nodes),
            sum(n.cpus for n in self.nodes),
            list(self.policy.revocations),
            self.passes,
            self.samples,
        )


def _apply(state: dict[str, NodeView], parts: tuple[Part, ...], exclusive: bool, sign: int) -> None:
    if isinstance(state, IndexedNodes):
        state.apply(parts, exclusive, sign)
    else:
        apply(state, parts, exclusive, sign)


def _cost(view: JobView) -> float:
    """The fewest cores `view` can take (agent jobs share cores 1:16 at most)."""
    return view.cpus / 16.0 if view.job_class == "agent" else float(view.cpus)


def _may_fit(view: JobView, free_cpus: float, free_gpus: float) -> bool:
    """Whether `view` could start somewhere in this much free capacity."""
    return _cost(view) <= free_cpus + 1e-6 and view.gpus <= free_gpus


def _reclaim(policy: SimPolicy, p: Placement) -> tuple[float, str]:
    """When a borrowed placement is reclaimed, and whether the borrower is requeued or preempted."""
    cfg = getattr(policy, "cfg", None)
    rules = [r for r in getattr(cfg, "borrow", []) if r.lender == p.borrowed_from]
    if not rules:
        return 4 * 3600.0, "requeue"
    rule = min(rules, key=lambda r: r.max_duration)
    return float(rule.max_duration), rule.on_reclaim
