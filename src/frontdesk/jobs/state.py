"""Job states: one enum (Slurm's names), the terminal set, and the one table from Slurm's states to ours.

Every backend answers in `JobState`; the Slurm parser maps what Slurm prints through `SLURM_STATES` (each
row tested in tests/unit/slurm/test_parse.py). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

__all__ = ["JobState", "SLURM_STATES", "TERMINAL_STATES", "UNFINISHED_STATES"]


class JobState(StrEnum):
    """A job's state; the names are Slurm's so that agents see one vocabulary on every backend."""

    PENDING = "PENDING"
    """Queued: waiting for dependencies, resources or priority."""
    RUNNING = "RUNNING"
    """Started on its resources."""
    SUSPENDED = "SUSPENDED"
    """Stopped by the scheduler, keeping its allocation."""
    COMPLETED = "COMPLETED"
    """Ended with exit code 0."""
    FAILED = "FAILED"
    """Ended with a non-zero exit code or a signal it was not sent by frontdesk."""
    CANCELLED = "CANCELLED"
    """Cancelled by a user, an agent or an administrator."""
    TIMEOUT = "TIMEOUT"
    """Killed at the end of its walltime."""
    OUT_OF_MEMORY = "OUT_OF_MEMORY"
    """Killed for going over its memory limit."""
    NODE_FAIL = "NODE_FAIL"
    """Its node (or the local executor's shepherd) died under it."""
    PREEMPTED = "PREEMPTED"
    """Evicted for a higher-priority job."""
    BOOT_FAIL = "BOOT_FAIL"
    """Its node failed to boot."""
    DEADLINE = "DEADLINE"
    """Ended because it reached its deadline."""
    DEPENDENCY_NEVER_SATISFIED = "DEPENDENCY_NEVER_SATISFIED"
    """A dependency ended in a way that means this job can never run."""

    @property
    def terminal(self) -> bool:
        """Whether the job has ended for good (this attempt)."""
        return self in TERMINAL_STATES


TERMINAL_STATES: frozenset[JobState] = frozenset(
    {
        JobState.COMPLETED,
        JobState.FAILED,
        JobState.CANCELLED,
        JobState.TIMEOUT,
        JobState.OUT_OF_MEMORY,
        JobState.NODE_FAIL,
        JobState.PREEMPTED,
        JobState.BOOT_FAIL,
        JobState.DEADLINE,
        JobState.DEPENDENCY_NEVER_SATISFIED,
    }
)
"""The states a job (or one attempt of it) never leaves."""

UNFINISHED_STATES: tuple[JobState, ...] = tuple(s for s in JobState if s not in TERMINAL_STATES)
"""The states of a job that has not ended: every state not terminal, so a new state lands here unless it is made
terminal. In declaration order, so that SQL built from it reads the same in every process. The one definition:
the store, retention, quotas and the agents store build their `state IN (...)` from it."""

SLURM_STATES: Mapping[str, JobState] = {
    "PENDING": JobState.PENDING,
    "CONFIGURING": JobState.PENDING,  # allocated, nodes getting ready: nothing runs yet
    "REQUEUED": JobState.PENDING,
    "REQUEUE_FED": JobState.PENDING,
    "REQUEUE_HOLD": JobState.PENDING,
    "RESV_DEL_HOLD": JobState.PENDING,
    "RUNNING": JobState.RUNNING,
    "COMPLETING": JobState.RUNNING,  # the script ended; epilogs and cleanup still run
    "RESIZING": JobState.RUNNING,
    "SIGNALING": JobState.RUNNING,
    "STAGE_OUT": JobState.RUNNING,
    "SUSPENDED": JobState.SUSPENDED,
    "STOPPED": JobState.SUSPENDED,
    "COMPLETED": JobState.COMPLETED,
    "FAILED": JobState.FAILED,
    "SPECIAL_EXIT": JobState.FAILED,
    "CANCELLED": JobState.CANCELLED,
    "REVOKED": JobState.CANCELLED,  # a sibling of a federated job started elsewhere
    "TIMEOUT": JobState.TIMEOUT,
    "OUT_OF_MEMORY": JobState.OUT_OF_MEMORY,
    "NODE_FAIL": JobState.NODE_FAIL,
    "PREEMPTED": JobState.PREEMPTED,
    "BOOT_FAIL": JobState.BOOT_FAIL,
    "DEADLINE": JobState.DEADLINE,
}
"""Every job state Slurm 22.05 reports (squeue, scontrol, sacct), mapped to ours: the one table."""
