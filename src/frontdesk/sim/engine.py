"""The discrete-event simulator: arrivals, starts, ends and reclaims on a cluster of nodes, through a policy.

Faster than real time: the clock jumps from event to event; one scheduling pass per instant that changed
something. Nothing here reads a clock or does I/O.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field

from frontdesk.policy.model import JobView, NodeView, Placement, RunningView, apply
from frontdesk.policy.trial import Revocation
from frontdesk.sim.policies import SimPolicy
from frontdesk.sim.workload import SimJob, Workload

__all__ = ["JobRecord", "SimResult", "simulate"]

ARRIVE, END, RECLAIM = 0, 1, 2


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


def simulate(
    workload: Workload, nodes: list[NodeView], policy: SimPolicy, start_hour: float = 0.0, trace: bool = False
) -> SimResult:
    """Replay `workload` on `nodes` under `policy`; time 0 is `start_hour` o'clock."""
    state = {n.name: n.copy() for n in nodes}
    heap: list[tuple[float, int, int, object]] = []
    seq = 0
    for job in workload.jobs:
        heap.append((job.submit, ARRIVE, seq, job))
        seq += 1
    heapq.heapify(heap)
    queue: dict[str, tuple[SimJob, JobView]] = {}
    running: dict[str, _Running] = {}
    records: dict[str, JobRecord] = {}
    w0 = workload.start
    w1 = workload.end
    gpu_s = cpu_s = 0.0
    busy_g = busy_c = 0.0
    last = heap[0][0] if heap else 0.0
    passes = 0
    samples: list[tuple[float, float, float]] = []
    cpu_total = sum(n.cpus for n in nodes if not n.drained)
    window: int | None = getattr(policy, "window", None)
    costs: list[tuple[float, str]] = []
    """(least cores, job id) of queued jobs: a heap, started ones dropped lazily."""
    gpu_total = sum(n.gpus for n in nodes if not n.drained)

    def integrate(t: float) -> None:
        nonlocal gpu_s, cpu_s, last
        a, b = max(last, w0), t if w1 is None else min(t, w1)
        if b > a:
            gpu_s += busy_g * (b - a)
            cpu_s += busy_c * (b - a)
        last = t

    while heap:
        now = heap[0][0]
        integrate(now)
        dirty = False
        while heap and heap[0][0] == now:
            _, kind, _, item = heapq.heappop(heap)
            if kind == ARRIVE:
                assert isinstance(item, SimJob)
                view = policy.admit(item, now)
                rec = records.get(item.id) or JobRecord(item, view.job_class, view.trial, now)
                rec.free_at_submit = not any(v.pool == view.pool for _, v in queue.values()) and policy.fits_now(
                    view, state, (start_hour + now / 3600) % 24
                )
                records[item.id] = rec
                queue[item.id] = (item, view)
                heapq.heappush(costs, (_cost(view), item.id))
                dirty = True
            else:
                assert isinstance(item, tuple)
                job_id, token = item
                run = running.get(job_id)
                if run is None or run.token != token:
                    continue
                del running[job_id]
                apply(state, run.placement.parts, run.placement.exclusive, -1)
                busy_g -= sum(p.gpus for p in run.placement.parts)
                busy_c -= sum(p.cpus for p in run.placement.parts)
                if kind == END:
                    run.record.end = now
                    policy.finished(run.record.job, run.view, run.start, now)
                else:  # reclaimed by the lending pool: requeued, or ended as preempted
                    run.record.preempted += 1
                    if _reclaim(policy, run.placement)[1] == "requeue":
                        run.record.start = None
                        queue[job_id] = (run.record.job, run.view)
                        heapq.heappush(costs, (_cost(run.view), job_id))
                    else:
                        run.record.end = now
                dirty = True
        if not dirty or not queue:
            if trace:
                samples.append((now, busy_g, busy_c))
            continue
        while costs[0][1] not in queue:  # lazily drop started jobs from the cost heap
            heapq.heappop(costs)
        if costs[0][0] > cpu_total - busy_c + 1e-6:
            views = []
        else:  # a policy that only ever looks at the first `window` queued jobs gets only those
            views = [v for _, v in itertools.islice(queue.values(), window)]
        if not any(_may_fit(v, cpu_total - busy_c, gpu_total - busy_g) for v in views):
            if trace:  # nothing queued fits in all the free capacity: a pass would start nothing
                samples.append((now, busy_g, busy_c))
            continue
        hour = (start_hour + now / 3600) % 24
        passes += 1
        starts = policy.schedule(views, state, [r.runtime_view for r in running.values()], now, hour)
        for p in starts:
            job, view = queue.pop(p.job_id)
            apply(state, p.parts, p.exclusive)
            busy_g += sum(x.gpus for x in p.parts)
            busy_c += sum(x.cpus for x in p.parts)
            rec = records[job.id]
            rec.start = now
            rec.borrowed = p.borrowed_from is not None
            seq += 1
            running[job.id] = _Running(
                rec,
                view,
                p,
                RunningView(job.id, p.parts, now + view.walltime_s, p.exclusive, view.job_class, view.trial),
                now,
                seq,
            )
            heapq.heappush(heap, (now + min(job.runtime, job.walltime), END, seq, (job.id, seq)))
            if p.borrowed_from is not None:
                heapq.heappush(heap, (now + _reclaim(policy, p)[0], RECLAIM, seq, (job.id, seq)))
        if trace:
            samples.append((now, busy_g, busy_c))
    end = w1 if w1 is not None else last
    gpus = sum(n.gpus for n in nodes)
    cpus = sum(n.cpus for n in nodes)
    return SimResult(
        policy.name,
        workload.name,
        [r for r in records.values() if r.submit >= w0],
        (w0, end),
        gpu_s,
        cpu_s,
        gpus,
        cpus,
        list(policy.revocations),
        passes,
        samples,
    )


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
