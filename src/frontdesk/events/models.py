"""Every state change is a typed, immutable Event, stored in the journal before anyone is told."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

__all__ = ["Event", "EventKind"]


class EventKind(StrEnum):
    """What happened; `data` carries the fields named in each docstring."""

    JOB_SUBMITTED = "job.submitted"
    """A job was accepted: name, spec, warnings, class, partition."""
    JOB_STATE = "job.state"
    """A job changed state: state, previous, reason, exit_code, attempt, backend_id."""
    JOB_RETRY = "job.retry"
    """An attempt ended in a retryable state and a new attempt was queued: attempt, after, backoff."""
    JOB_REPORT = "job.report"
    """A job ended and its report was stored: report (the JSON form)."""
    JOB_WARNING = "job.warning"
    """Something worth telling the submitter: source (memory/guard/policy), text."""
    GUARD_VERDICT = "guard.verdict"
    """A guard check said ask or deny: verdict, rule, reason, command (redacted)."""
    SESSION_REGISTERED = "session.registered"
    """An agent session became a principal: session, harness, user."""
    SESSION_WAKE = "session.wake"
    """Reports were delivered to a session: channel, jobs, ok, error."""
    POLICY_LOADED = "policy.loaded"
    """A policy version was loaded: version."""
    POLICY_TRIAL_REVOKED = "policy.trial_revoked"
    """A principal lost the trial privilege: principal, reason, until."""
    LESSON_RECORDED = "memory.lesson"
    """A lesson was recorded or updated: lesson id, signature, scope."""
    NODE_DRAINED = "node.drained"
    """A node failed a health check: node, check, detail."""
    ACCESS_DENIED = "access.denied"
    """A caller was refused a read or an action: action, target, owner, via (the principal is the caller)."""
    ACCESS_ADMIN = "access.admin"
    """An admin read or acted on another user's object: action, target, owner, via (the principal is the admin)."""
    ACCESS_UNAUTHENTICATED = "access.unauthenticated"
    """Requests failed to authenticate (401): source, count, via, reason, token_ids, interval (api/authfail.py)."""
    SLURM_ENDED = "slurm.ended"
    """A Slurm job ended (EpilogSlurmctld → the facility gateway): slurm_ids, uid, exit_code; the principal is
    the job's user, whose per-user gateway receives it by subscription (facility_push.py)."""


@dataclass(frozen=True)
class Event:
    """One journal entry; `seq` is assigned by the store and grows monotonically."""

    kind: EventKind
    data: dict[str, Any] = field(default_factory=dict)
    job_id: int | None = None
    session: str | None = None
    principal: str | None = None
    seq: int = 0
    ts: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form (the stable schema of `frontdesk events --json`)."""
        return {
            "seq": self.seq,
            "ts": self.ts,
            "kind": str(self.kind),
            "job_id": self.job_id,
            "session": self.session,
            "principal": self.principal,
            "data": self.data,
        }

    def data_json(self) -> str:
        """The data field serialised for the journal."""
        return json.dumps(self.data, sort_keys=True, default=str)
