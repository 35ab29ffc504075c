"""The policies the simulator compares: FIFO, EASY backfill, and frontdesk's (the gateway's own code)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Protocol

from frontdesk.policy.backfill import backfill
from frontdesk.policy.classify import classify
from frontdesk.policy.config import ClassifyConfig, PolicyConfig
from frontdesk.policy.model import JobView, NodeView, Placement, RunningView
from frontdesk.policy.placement import place
from frontdesk.policy.priority import FairshareLedger
from frontdesk.policy.scheduler import PoolPlacer, plan
from frontdesk.policy.shapes import MISS, IndexedNodes, place_cores
from frontdesk.policy.suspend import SuspendRules
from frontdesk.policy.trial import Revocation, TrialLedger
from frontdesk.sim.workload import SimJob
from frontdesk.spec.accelerators import GpuNeed, catalog, eligible

__all__ = ["BaselinePolicy", "FrontdeskPolicy", "SimPolicy"]


class SimPolicy(Protocol):
    """What the simulator drives."""

    name: str
    revocations: list[Revocation]

    def admit(self, job: SimJob, now: float) -> JobView:
        """Classify and route a submission."""

    def schedule(
        self,
        queue: Sequence[JobView],
        nodes: Mapping[str, NodeView],
        running: Sequence[RunningView],
        now: float,
        hour: float,
        in_place: bool = False,
    ) -> list[Placement]:
        """Jobs to start now; `in_place`: already applied to `nodes` (`backfill`'s `in_place`)."""

    def fits_now(self, job: JobView, nodes: Mapping[str, NodeView], hour: float) -> bool:
        """Whether the job's resources are free right now (ignoring the queue)."""

    def finished(self, job: SimJob, view: JobView, start: float, end: float) -> None:
        """Account for a job that ended."""


class _FlatPlacer:
    """All nodes are one pool; first-fit onto the fewest nodes; no oversubscription."""

    def __init__(self, nodes: Mapping[str, NodeView]) -> None:
        if isinstance(nodes, IndexedNodes):
            self.names: Sequence[str] = nodes.layout.names
            self.present: Set[str] = nodes.layout.gpu_models
            self.pools: Sequence[str] = tuple(nodes.layout.by_pool)
        else:
            self.pools = tuple(dict.fromkeys(n.pool for n in nodes.values()))
            self.names = list(nodes)
            self.present = {n.gpu_model for n in nodes.values() if n.gpu_model}
        self._ranks: dict[GpuNeed, dict[str, int]] = {}

    def candidates(self, job: JobView) -> Sequence[str]:
        return self.names

    def signature(self, job: JobView) -> Hashable:
        # the GPU need matters only to a job asking GPUs (and hashing it costs a dataclass hash per look-up)
        return (job.cpus, job.gpus, job.memory_bytes, job.nodes, job.gpu if job.gpus else None)

    def cores_rule(self, job: JobView) -> tuple[Sequence[str], float] | None:
        if job.gpus or job.shared_gpu or job.memory_bytes or job.nodes or not self.pools:
            return None
        return self.pools, 1.0

    def place(self, job: JobView, nodes: Mapping[str, NodeView], exclude: frozenset[str]) -> Placement | None:
        rank = None
        if job.gpus:
            if job.gpu not in self._ranks:
                self._ranks[job.gpu] = {m: 0 for m in eligible(job.gpu, catalog()) if m in self.present}
            rank = self._ranks[job.gpu]
        got = place_cores(job, nodes, nodes.pools(), exclude, "spread") if isinstance(nodes, IndexedNodes) else MISS
        if got is MISS:
            pool = [n for name, n in nodes.items() if name not in exclude] if exclude else list(nodes.values())
            got = place(job, pool, "spread", 1.0, rank)
        return Placement(job.id, got[0], got[1]) if got else None


@dataclass
class BaselinePolicy:
    """FIFO (`easy=False`) or EASY backfill (`easy=True`) over the whole cluster, in submission order."""

    name: str
    easy: bool
    classify_cfg: ClassifyConfig = field(default_factory=ClassifyConfig)
    depth: int = 200
    revocations: list[Revocation] = field(default_factory=list)

    @property
    def window(self) -> int:
        """Only the first `depth` queued jobs (in submission order) are ever considered."""
        return self.depth

    def admit(self, job: SimJob, now: float) -> JobView:
        cls, _ = classify(job.declared, job.cpus, job.gpus, job.walltime, self.classify_cfg)
        return JobView(
            job.id,
            job.principal,
            cls,
            "all",
            job.cpus,
            job.memory_bytes,
            job.gpus,
            job.walltime,
            now,
            job.group,
            False,
            job.gpu,
            job.nodes,
        )

    def schedule(
        self,
        queue: Sequence[JobView],
        nodes: Mapping[str, NodeView],
        running: Sequence[RunningView],
        now: float,
        hour: float,
        in_place: bool = False,
    ) -> list[Placement]:
        key = (lambda j: "all") if self.easy else None
        return backfill(queue, nodes, running, now, _FlatPlacer(nodes), key, self.depth, in_place=in_place)[0]

    def fits_now(self, job: JobView, nodes: Mapping[str, NodeView], hour: float) -> bool:
        return _FlatPlacer(nodes).place(job, nodes, frozenset()) is not None

    def finished(self, job: SimJob, view: JobView, start: float, end: float) -> None:
        return None


@dataclass
class FrontdeskPolicy:
    """frontdesk's policy: the same classify/trial/priority/plan functions the gateway runs."""

    cfg: PolicyConfig
    name: str = "frontdesk"
    revocations: list[Revocation] = field(default_factory=list)
    direct: str | None = None
    """The pool of jobs that do not come from agents (a trace's own users, who submit straight to the
    facility's partition, never through frontdesk's classifier); None: every job is routed by frontdesk."""
    suspend: SuspendRules | None = None
    """Blocked short trials may suspend running batch jobs (sim/suspend.py); None: never."""
    shares: FairshareLedger = field(init=False)
    trials: TrialLedger = field(init=False)

    def __post_init__(self) -> None:
        self.shares = FairshareLedger(float(self.cfg.priority.fairshare_half_life))
        self.trials = TrialLedger(self.cfg.trial)

    def admit(self, job: SimJob, now: float) -> JobView:
        cls, _ = classify(job.declared, job.cpus, job.gpus, job.walltime, self.cfg.classify)
        granted = False
        if job.trial:
            verdict = self.trials.request(
                job.principal, job.template, job.cpus, job.gpus, job.memory_bytes, job.walltime, now
            )
            granted = verdict.granted
            if verdict.revocation:
                self.revocations.append(verdict.revocation)
        if self.direct is not None and not job.agent:
            pool = self.direct
        else:
            pool = self.cfg.pool_for("agent" if granted else cls).name
        return JobView(
            job.id,
            job.principal,
            cls,
            pool,
            job.cpus,
            job.memory_bytes,
            job.gpus,
            job.walltime,
            now,
            job.group,
            granted,
            job.gpu,
            job.nodes,
        )

    def schedule(
        self,
        queue: Sequence[JobView],
        nodes: Mapping[str, NodeView],
        running: Sequence[RunningView],
        now: float,
        hour: float,
        in_place: bool = False,
    ) -> list[Placement]:
        return plan(queue, nodes, running, now, hour, self.cfg, self.shares, in_place=in_place)[0]

    def fits_now(self, job: JobView, nodes: Mapping[str, NodeView], hour: float) -> bool:
        return PoolPlacer(self.cfg, nodes, hour).place(job, nodes, frozenset()) is not None

    def finished(self, job: SimJob, view: JobView, start: float, end: float) -> None:
        self.shares.charge(job.principal, job.group, job.cpus, job.gpus, end - start, end)
        if view.trial:
            rev = self.trials.ended(job.principal, job.template, end - start, job.walltime, end)
            if rev:
                self.revocations.append(rev)
