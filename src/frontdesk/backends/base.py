"""The backend seam: what a backend is handed, what it answers, and the Protocol.

A backend does four things: submit, cancel, one batched state query, and a push of "these ids changed"
hints (the gateway then queries them). Dependencies, retries and reports stay in the gateway, so every
backend behaves the same to agents. `JobState` and `TERMINAL_STATES` live in `frontdesk.jobs.state`
(re-exported here).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from frontdesk.jobs.state import TERMINAL_STATES, JobState

__all__ = [
    "Backend",
    "BackendJob",
    "BackendStatus",
    "Inventory",
    "JobState",
    "OrdersItsQueue",
    "PushHint",
    "Reprioritises",
    "SubmitsArrays",
    "SweepsRecords",
    "TERMINAL_STATES",
    "Usage",
]


@dataclass(frozen=True)
class Usage:
    """What a job used, as far as the backend can tell."""

    cpu_seconds: float | None = None
    peak_rss_bytes: int | None = None
    gpu_util_percent: float | None = None
    gpu_mem_peak_bytes: int | None = None
    suspended_s: float | None = None
    """Seconds it spent suspended (its cores lent to trials); None when it never was."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form (`suspended_s` only for a job that was suspended)."""
        out: dict[str, Any] = {
            "cpu_seconds": self.cpu_seconds,
            "peak_rss_bytes": self.peak_rss_bytes,
            "gpu_util_percent": self.gpu_util_percent,
            "gpu_mem_peak_bytes": self.gpu_mem_peak_bytes,
        }
        if self.suspended_s is not None:
            out["suspended_s"] = self.suspended_s
        return out


@dataclass(frozen=True)
class BackendJob:
    """One attempt of a job, as the gateway hands it to a backend."""

    job_id: int
    attempt: int
    name: str
    argv: list[str]
    """The command to run; a `script` spec is written to a file and run as [interpreter, file]."""
    workdir: Path
    env: Mapping[str, str]
    """The job's whole environment: the submitter's (filtered by the site list), the spec's, FRONTDESK_JOB_ID.

    Never the gateway's own: a backend lays it over the submitting user's login defaults only."""
    job_dir: Path
    """The gateway's directory for this attempt: script, logs, provenance."""
    cpus: int = 1
    memory_bytes: int | None = None
    gpus: int = 0
    gpu_types: tuple[str, ...] = ()
    gpu_memory_bytes: int | None = None
    """A shared GPU (`gpus` is then 1): the device memory asked; None with `gpu_share` set: that share of it."""
    gpu_share: float | None = None
    """A shared GPU: the share of one device's compute asked (0 < share < 1), or None."""
    walltime_seconds: int | None = None
    partition: str | None = None
    priority: int = 0
    """Higher starts first where the backend orders its own queue."""
    qos: str | None = None
    script_text: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    uid: int | None = None
    """The submitter's Unix uid (from the kernel's peer credentials): the job runs as this user."""
    array_id: int | None = None
    """For a task of an array: the array's job id in frontdesk (the parent row); None otherwise."""
    array_index: int | None = None
    """For a task of an array: its index (FRONTDESK_ARRAY_TASK_ID / SLURM_ARRAY_TASK_ID in `env`)."""

    @property
    def key(self) -> str:
        """A stable name for this attempt that the backend can find again after a crash."""
        return f"fd-{self.job_id}.{self.attempt}"

    @property
    def shared_gpu(self) -> bool:
        """A fractional GPU request: packed with other shared jobs on one device, never with a whole-GPU job."""
        return self.gpu_memory_bytes is not None or self.gpu_share is not None


@dataclass(frozen=True)
class BackendStatus:
    """A backend's answer about one job attempt."""

    backend_id: str
    state: JobState
    exit_code: int | None = None
    signal: int | None = None
    submitted_at: float | None = None
    started_at: float | None = None
    ended_at: float | None = None
    usage: Usage | None = None
    reason: str | None = None
    stdout_path: Path | None = None
    stderr_path: Path | None = None
    node: str | None = None
    raw_state: str | None = None


@dataclass(frozen=True)
class Inventory:
    """What a backend can run jobs on."""

    cpus: int
    memory_bytes: int
    gpus: tuple[dict[str, Any], ...] = ()
    pools: tuple[dict[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "cpus": self.cpus,
            "memory_bytes": self.memory_bytes,
            "gpus": list(self.gpus),
            "pools": list(self.pools),
        }


PushHint = Callable[[Sequence[str]], None]
"""Called by a backend (from any thread) with backend ids whose state may have changed."""


@runtime_checkable
class Backend(Protocol):
    """What the gateway needs from a place that runs jobs."""

    name: str

    async def start(self, push: PushHint) -> None:
        """Begin work; recover what survived a gateway restart; call `push` on changes."""

    async def stop(self) -> None:
        """Stop background work; running jobs keep running."""

    async def submit(self, job: BackendJob) -> str:
        """Queue one attempt and return its backend id."""

    async def cancel(self, backend_id: str) -> None:
        """Cancel one attempt and kill its whole process tree."""

    async def query(self, backend_ids: Sequence[str]) -> dict[str, BackendStatus]:
        """The state of many attempts in ONE batched query; unknown ids are left out."""

    async def lookup(self, keys: Sequence[str], owners: Mapping[str, int] | None = None) -> dict[str, str]:
        """Backend ids of attempts known by `BackendJob.key` (recovery after a crash mid-submit); `owners`: the
        uid each key's attempt runs as, so a backend job of another user named like it is never taken for it."""

    def inventory(self) -> Inventory:
        """The resources this backend runs on."""


@runtime_checkable
class Reprioritises(Protocol):
    """A backend extra: a waiting attempt's priority can change after submission (Slurm: `scontrol update Nice`)."""

    async def set_priority(self, backend_id: str, priority: int) -> None:
        """Push a new priority for one waiting attempt."""


@runtime_checkable
class SubmitsArrays(Protocol):
    """A backend extra: the tasks of one array are queued in one call (Slurm: one `sbatch --array`).

    Without it the gateway submits each task with `submit`."""

    async def submit_array(self, jobs: Sequence[BackendJob], max_running: int | None) -> list[str]:
        """Queue every task (same `array_id`, in index order); one backend id per task, in order.

        `max_running` is the array's `%N` limit (None: no limit)."""


@runtime_checkable
class SweepsRecords(Protocol):
    """A backend extra: files it keeps for recovery after a crash (Slurm: sbatch's answers) are deleted once the
    gateway's database shows nothing can need them; the gateway runs one bounded pass now and then (core/records)."""

    def sweep_records(
        self, settled: Callable[[Collection[str]], set[str]], ended: Callable[[Collection[str]], dict[str, bool]]
    ) -> tuple[int, int]:
        """One pass, in a worker thread: `settled(keys)` are attempt keys whose id is stored (or whose job is
        gone), `ended(ids)` maps backend ids to whether their job ended; (files examined, units deleted)."""


@runtime_checkable
class OrdersItsQueue(Protocol):
    """A backend extra: the backend keeps its own queue and lets a plug-in pick what starts (the embedded one)."""

    scheduler: Callable[..., Any]
    """(queued jobs, free resources, now) -> backend ids to start, in order (or the embedded backend's `Picks`:
    starts, and trials started on the cores of jobs they suspend)."""
    hold_reason: Callable[[], str | None]
    """Why waiting jobs wait beyond resources (a drained node), shown as their PENDING reason."""
