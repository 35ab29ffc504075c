"""The cluster view the policy decides over: queued jobs, nodes, running jobs, placements. Plain data."""

from __future__ import annotations

from dataclasses import dataclass, field

from frontdesk.spec.accelerators import GpuNeed

__all__ = ["JobView", "NodeView", "Part", "Placement", "RunningView"]


@dataclass(frozen=True)
class JobView:
    """A queued job as the policy sees it (already classified and routed)."""

    id: str
    principal: str
    job_class: str
    pool: str
    cpus: int = 1
    memory_bytes: int = 0
    gpus: int = 0
    walltime_s: float = 3600.0
    queued_at: float = 0.0
    group: str = ""
    trial: bool = False
    """The trial privilege was granted (within budget, not revoked)."""
    gpu: GpuNeed = field(default_factory=GpuNeed)
    nodes: int = 0
    """An explicit node count (0: derived from the request and the node shape)."""
    shared_gpu: bool = False
    """A share of one GPU (`gpus` is then 0 here): it needs a node with GPUs; the backend picks the device."""


@dataclass(slots=True)
class NodeView:
    """One node (or one slice of the embedded machine) and what is in use on it."""

    name: str
    pool: str
    cpus: int
    memory_bytes: int
    gpus: int = 0
    gpu_model: str | None = None
    used_cpus: float = 0.0
    used_memory: int = 0
    used_gpus: int = 0
    jobs: int = 0
    exclusive: bool = False
    drained: bool = False

    @property
    def free_cpus(self) -> float:
        """Cores not allocated (oversubscribed jobs count a fraction of a core)."""
        return self.cpus - self.used_cpus

    @property
    def free_memory(self) -> int:
        """Bytes not allocated (memory is never oversubscribed)."""
        return self.memory_bytes - self.used_memory

    @property
    def free_gpus(self) -> int:
        """Whole GPUs not allocated (GPU memory is never oversubscribed: a GPU goes to one job)."""
        return self.gpus - self.used_gpus

    @property
    def idle(self) -> bool:
        """Nothing runs here."""
        return self.jobs == 0

    def copy(self) -> NodeView:
        """A scratch copy for planning."""
        return NodeView(
            self.name,
            self.pool,
            self.cpus,
            self.memory_bytes,
            self.gpus,
            self.gpu_model,
            self.used_cpus,
            self.used_memory,
            self.used_gpus,
            self.jobs,
            self.exclusive,
            self.drained,
        )


@dataclass(frozen=True, slots=True)
class Part:
    """What one job holds on one node."""

    node: str
    cpus: float
    memory_bytes: int
    gpus: int


@dataclass(frozen=True)
class Placement:
    """A decision to start `job_id` now on `parts`."""

    job_id: str
    parts: tuple[Part, ...]
    exclusive: bool = False
    borrowed_from: str | None = None
    """The lending pool, when the job runs under a borrowing rule."""


@dataclass(frozen=True, slots=True)
class RunningView:
    """A running job: where it is and when it is expected to end (start + requested walltime)."""

    id: str
    parts: tuple[Part, ...]
    expected_end: float
    exclusive: bool = False
    job_class: str = ""
    trial: bool = False
    """Agent work (a granted trial): in a mixed pool it may hold only a bounded share of a reservation."""


def apply(nodes: dict[str, NodeView], parts: tuple[Part, ...], exclusive: bool, sign: int = 1) -> None:
    """Allocate (sign=1) or release (sign=-1) `parts` on `nodes` in place."""
    for p in parts:
        n = nodes[p.node]
        n.used_cpus += sign * p.cpus
        n.used_memory += sign * p.memory_bytes
        n.used_gpus += sign * p.gpus
        n.jobs += sign
        if exclusive:
            n.exclusive = sign > 0
        if n.jobs == 0:
            n.used_cpus, n.used_memory, n.used_gpus, n.exclusive = 0.0, 0, 0, False
