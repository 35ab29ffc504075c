"""A job's lifecycle as one pure function: `step(record, signal, now) -> Transition`; the gateway applies it.

Signals are what the gateway learns: the backend's answer about the current attempt (`BackendSaid`), a
cancel request (`CancelAsked`), the states of the job's dependencies (`DepsSeen`), and the result of handing
an attempt to the backend (`Launched`, `LaunchFailed`, `PrepareFailed`). A `Transition` says which columns to
set (in one write), which events to store, and what the gateway must do next (`Action`). The races live here:
a cancel while a launch is in flight sets `cancel_requested` and the launch, when it lands, is cancelled on
the backend; a job's end sets `report_pending` with its terminal state so a crash before the report is stored
is finished on the next start. No clock, no I/O: `now` is passed in.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum

from frontdesk.backends.base import BackendStatus
from frontdesk.events.models import Event, EventKind
from frontdesk.jobs.record import EndStage, JobRecord, Scalar
from frontdesk.jobs.state import JobState

__all__ = [
    "Action",
    "BackendSaid",
    "CancelAsked",
    "DepsSeen",
    "EndStage",
    "Launched",
    "LaunchFailed",
    "LaunchLost",
    "Launching",
    "PrepareFailed",
    "Signal",
    "Transition",
    "dependency_verdict",
    "step",
]


class Action(Enum):
    """What the gateway does after storing a transition."""

    NONE = "none"
    DISPATCH = "dispatch"
    """Hand the (new) current attempt to the backend."""
    CANCEL_BACKEND = "cancel_backend"
    """Ask the backend to kill the current attempt (its end arrives later as a `BackendSaid`)."""
    FINISH = "finish"
    """The job ended: build the report, store it with the terminal events, fan them out."""
    WAKE = "wake"
    """Something waits on the clock (a retry's backoff): wake the tick."""


@dataclass(frozen=True)
class BackendSaid:
    """The backend's answer about the job's current attempt."""

    status: BackendStatus


@dataclass(frozen=True)
class CancelAsked:
    """Someone asked to cancel the job."""


@dataclass(frozen=True)
class DepsSeen:
    """The current states of the job's dependencies, in `depends_on` order (None: no such job)."""

    states: tuple[JobState | None, ...]
    ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class Launching:
    """The gateway is about to hand the current attempt to the backend (`submitting` is set first)."""


@dataclass(frozen=True)
class Launched:
    """The backend accepted the current attempt under this id."""

    backend_id: str


@dataclass(frozen=True)
class LaunchFailed:
    """The backend refused the current attempt."""

    error: str
    transient: bool = False
    """The refusal may pass (the disk is full): the job stays PENDING and is tried again later."""


@dataclass(frozen=True)
class LaunchLost:
    """After a crash mid-launch, the backend does not know the attempt: it was never handed over."""


@dataclass(frozen=True)
class PrepareFailed:
    """The attempt could not be prepared (its directory, script or spec)."""

    error: str
    transient: bool = False
    """The failure may pass (the disk is full): the job stays PENDING and is tried again later."""


Signal = BackendSaid | CancelAsked | DepsSeen | Launching | Launched | LaunchFailed | LaunchLost | PrepareFailed


@dataclass(frozen=True)
class Transition:
    """What to store (one write), which events to store after it, and what to do next."""

    changes: Mapping[str, Scalar] = field(default_factory=dict)
    attempt: Mapping[str, Scalar] | None = None
    """Columns of the current attempt's row to insert or update (None: leave it)."""
    events: tuple[Event, ...] = ()
    action: Action = Action.NONE

    @property
    def ends(self) -> bool:
        """Whether this transition ends the job."""
        return self.action is Action.FINISH


NOTHING = Transition()

RETRY_LAUNCH_S = 5.0
"""How long a job whose launch failed for a passing reason (a full disk) waits before the next try."""


def dependency_verdict(states: Sequence[JobState | None], fail_action: str) -> str:
    """'ready', 'wait' or 'never' for a job's dependencies."""
    for state in states:
        if state is None:
            return "never"
        if not state.terminal:
            return "wait"
        if state != JobState.COMPLETED and fail_action == "abort":
            return "never"
    return "ready"


def _end(rec: JobRecord, state: JobState, reason: str, now: float, **more: Scalar) -> Transition:
    changes: dict[str, Scalar] = {"state": state.value, "reason": reason, "ended_at": now}
    changes.update(more)
    changes["report_pending"] = int(EndStage.STATE_STORED)
    return Transition(changes=changes, action=Action.FINISH)


def _event(rec: JobRecord, kind: EventKind, data: dict[str, Scalar]) -> Event:
    return Event(kind, job_id=rec.id, session=rec.session, principal=rec.principal, data=dict(data))


def step(rec: JobRecord, signal: Signal, now: float) -> Transition:
    """The one place a job's state changes: pure, total over every (record, signal) pair."""
    if rec.terminal:
        # An ended job never changes again; an attempt that landed after the end is killed.
        if isinstance(signal, Launched):
            return Transition(changes={"submitting": 0}, action=Action.CANCEL_BACKEND)
        return NOTHING
    if isinstance(signal, BackendSaid):
        return _backend_said(rec, signal.status, now)
    if isinstance(signal, CancelAsked):
        return _cancel(rec, now)
    if isinstance(signal, DepsSeen):
        return _deps_seen(rec, signal, now)
    if isinstance(signal, Launching):
        return Transition(changes={"submitting": 1, "reason": "Queued"})
    if isinstance(signal, Launched):
        return _launched(rec, signal.backend_id)
    if isinstance(signal, LaunchLost):
        if rec.cancel_requested:
            return _end(rec, JobState.CANCELLED, "cancelled before it started", now, submitting=0, backend_id=None)
        return Transition(changes={"submitting": 0}, action=Action.DISPATCH)  # launch it again: it never ran
    if isinstance(signal, LaunchFailed | PrepareFailed) and signal.transient and not rec.cancel_requested:
        # an accepted job is never lost to a passing condition: it waits and is dispatched again by the tick
        changes: dict[str, Scalar] = {"submitting": 0, "reason": f"Disk full: {signal.error}"}
        changes["eligible_at"] = now + RETRY_LAUNCH_S
        return Transition(changes=changes, action=Action.WAKE)
    if isinstance(signal, LaunchFailed):
        if rec.cancel_requested:
            return _end(rec, JobState.CANCELLED, "cancelled before it started", now, submitting=0, backend_id=None)
        error = f"the backend refused the job: {signal.error}"
        return _end(rec, JobState.FAILED, error, now, submitting=0, backend_id=None)
    return _end(rec, JobState.FAILED, f"cannot prepare the job: {signal.error}", now, backend_id=None)


def _cancel(rec: JobRecord, now: float) -> Transition:
    if rec.backend_id is None and not rec.submitting:
        return _end(rec, JobState.CANCELLED, "cancelled before it started", now, backend_id=None)
    changes: dict[str, Scalar] = {"reason": "cancel requested", "cancel_requested": 1}
    if rec.backend_id is None:
        return Transition(changes=changes)  # the launch in flight is cancelled when it lands
    return Transition(changes=changes, action=Action.CANCEL_BACKEND)


def _launched(rec: JobRecord, backend_id: str) -> Transition:
    attempt: dict[str, Scalar] = {"backend_id": backend_id, "state": JobState.PENDING.value}
    changes: dict[str, Scalar] = {"submitting": 0, "backend_id": backend_id}
    action = Action.CANCEL_BACKEND if rec.cancel_requested else Action.WAKE
    return Transition(changes=changes, attempt=attempt, action=action)


def _backend_said(rec: JobRecord, status: BackendStatus, now: float) -> Transition:
    prev = rec.state
    if status.state.terminal:
        return _attempt_ended(rec, status, now)
    if status.state == prev:
        if status.reason and status.reason != rec.reason and prev == JobState.PENDING and not rec.cancel_requested:
            return Transition(changes={"reason": status.reason})
        return NOTHING
    changes: dict[str, Scalar] = {
        "state": status.state.value,
        "reason": "cancel requested" if rec.cancel_requested else status.reason,
        "started_at": status.started_at or rec.started_at or now,
    }
    # where the running job writes (`logs` reads it before the job ends)
    if status.stdout_path:
        changes["stdout_path"] = str(status.stdout_path)
    if status.stderr_path:
        changes["stderr_path"] = str(status.stderr_path)
    data: dict[str, Scalar] = {
        "state": status.state.value,
        "previous": prev.value,
        "reason": status.reason,
        "attempt": rec.attempt,
        "backend_id": status.backend_id,
    }
    return Transition(
        changes=changes,
        attempt={"state": status.state.value, "started_at": status.started_at},
        events=(_event(rec, EventKind.JOB_STATE, data),),
    )


def _attempt_ended(rec: JobRecord, status: BackendStatus, now: float) -> Transition:
    attempt: dict[str, Scalar] = {
        "state": status.state.value,
        "exit_code": status.exit_code,
        "started_at": status.started_at,
        "ended_at": status.ended_at,
    }
    retry = rec.spec_data().get("retry") or {}
    retryable = status.state.value in retry.get("on", []) and status.state != JobState.CANCELLED
    if retryable and rec.attempt <= int(retry.get("count", 0)) and not rec.cancel_requested:
        backoff = float(retry.get("backoff", 0))
        changes: dict[str, Scalar] = {
            "state": JobState.PENDING.value,
            "attempt": rec.attempt + 1,
            "backend_id": None,
            "reason": f"Retry after {status.state.value}",
            "eligible_at": now + backoff,
        }
        data: dict[str, Scalar] = {
            "attempt": rec.attempt + 1,
            "after": status.state.value,
            "exit_code": status.exit_code,
            "backoff": backoff,
        }
        event = _event(rec, EventKind.JOB_RETRY, data)
        return Transition(changes=changes, attempt=attempt, events=(event,), action=Action.WAKE)
    ended = _end(
        rec,
        status.state,
        status.reason or "",
        status.ended_at or now,
        exit_code=status.exit_code,
        signal=status.signal,
        started_at=status.started_at or rec.started_at,
        usage=_usage_json(status),
        stdout_path=str(status.stdout_path) if status.stdout_path else None,
        stderr_path=str(status.stderr_path) if status.stderr_path else None,
    )
    changes = dict(ended.changes)
    changes["reason"] = status.reason  # the backend's own words, None included
    return Transition(changes=changes, attempt=attempt, action=Action.FINISH)


def _usage_json(status: BackendStatus) -> str | None:
    usage = status.usage.to_dict() if status.usage else None
    return json.dumps(usage) if usage else None


def _deps_seen(rec: JobRecord, seen: DepsSeen, now: float) -> Transition:
    if rec.backend_id is not None or rec.submitting or rec.state != JobState.PENDING:
        return NOTHING
    verdict = dependency_verdict(seen.states, rec.spec_get("fail_action", "abort"))
    if verdict == "never":
        bad = [
            f"{i} ({s.value if s else 'missing'})"
            for i, s in zip(seen.ids, seen.states, strict=False)
            if s != JobState.COMPLETED
        ]
        return _end(rec, JobState.DEPENDENCY_NEVER_SATISFIED, f"dependency {', '.join(bad)} did not complete", now)
    if verdict == "wait":
        timeout = rec.spec_get("dependency_timeout")
        if timeout and now - rec.submitted_at > timeout:
            return _end(rec, JobState.DEPENDENCY_NEVER_SATISFIED, f"dependencies not met within {timeout}s", now)
        return NOTHING
    if rec.eligible_at is not None and rec.eligible_at > now:
        return NOTHING
    changes: dict[str, Scalar] = {"eligible_at": now} if rec.eligible_at is None else {}
    return Transition(changes=changes, action=Action.DISPATCH)
