"""An agent campaign: what frontdesk keeps about a session so it survives restarts and moves between nodes.

Pure data: the store (campaign_store.py) builds a `Campaign` from the gateway's tables; the summary
(campaign_summary.py) and the resume plan (campaign_resume.py) read it. A campaign is keyed by its
session id and lives in the gateway's database, not on the session's node (issue 18).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from frontdesk.agents.model import Harness, TurnState

__all__ = ["Campaign", "CampaignJob", "CampaignReport", "JobOutcome", "LessonSeen", "PlanItem", "PlanStatus"]


class PlanStatus(StrEnum):
    """A plan step's status (Claude Code's TodoWrite and Codex's update_plan use the same three words)."""

    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"

    @classmethod
    def parse(cls, value: object) -> PlanStatus:
        """A harness's status word; anything unknown counts as pending."""
        try:
            return cls(str(value).strip().lower())
        except ValueError:
            return cls.PENDING


@dataclass(frozen=True)
class PlanItem:
    """One step of the agent's last known plan."""

    text: str
    status: PlanStatus = PlanStatus.PENDING

    def to_dict(self) -> dict[str, str]:
        """JSON form."""
        return {"text": self.text, "status": str(self.status)}


class JobOutcome(StrEnum):
    """Where one of the campaign's jobs stands, as the summary groups them."""

    PENDING = "pending"
    """Not ended yet (queued or running): it keeps running while the harness is away."""
    COMPLETED = "completed"
    FAILED = "failed"
    """Ended in any other terminal state (failed, cancelled, timeout, out of memory...)."""


@dataclass(frozen=True)
class CampaignJob:
    """A job the session submitted, with the key that makes a replayed submission return it."""

    id: int
    name: str | None
    state: str
    outcome: JobOutcome
    idempotency_key: str | None
    reason: str | None = None
    exit_code: int | None = None
    cause: str | None = None
    """Why it failed, as its report classified it (None for completed and pending jobs)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "id": self.id,
            "name": self.name,
            "state": self.state,
            "outcome": str(self.outcome),
            "idempotency_key": self.idempotency_key,
            "reason": self.reason,
            "exit_code": self.exit_code,
            "cause": self.cause,
        }


@dataclass(frozen=True)
class CampaignReport:
    """A report that reached the gateway and not yet the session."""

    job_id: int
    name: str | None
    state: str
    text: str

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"job_id": self.job_id, "name": self.name, "state": self.state, "text": self.text}


@dataclass(frozen=True)
class LessonSeen:
    """A failure-memory lesson shown to the session on one of its submissions."""

    lesson_id: int
    job_id: int | None
    text: str

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"lesson_id": self.lesson_id, "job_id": self.job_id, "text": self.text}


@dataclass(frozen=True)
class Campaign:
    """Everything needed to resume a session elsewhere: who, where, the harness's handle, jobs, reports, plan."""

    session: str
    user: str
    harness: Harness
    cwd: str | None
    host: str | None
    turn_state: TurnState
    turn: int
    """User prompts seen (UserPromptSubmit); a resume that continues an unfinished turn keeps it."""
    incarnation: int
    """How many times the campaign was resumed; per-turn submission counts restart with each."""
    resume_handle: str | None
    """Claude Code's session id, Codex's thread id: what the harness's own resume takes."""
    transcript_path: str | None
    pid: int | None
    jobs: tuple[CampaignJob, ...] = ()
    unread: tuple[CampaignReport, ...] = ()
    lessons: tuple[LessonSeen, ...] = ()
    plan: tuple[PlanItem, ...] = ()
    plan_source: str | None = None
    suspended_at: float | None = None
    resumed_at: float | None = None
    turn_inferred: bool = False
    """A submission opened the current turn (its prompt hook was lost) and no hook has ended it."""
    updated_at: float = 0.0

    @property
    def pending(self) -> tuple[CampaignJob, ...]:
        """Jobs not ended."""
        return tuple(j for j in self.jobs if j.outcome is JobOutcome.PENDING)

    @property
    def turn_unfinished(self) -> bool:
        """The last turn never ended (the harness was killed in it): a resume replays it."""
        return self.turn_state in (TurnState.IN_TURN, TurnState.STOPPING) or self.turn_inferred

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (`GET /v1/sessions/{id}/campaign`, `frontdesk sessions show --json`)."""
        return {
            "session": self.session,
            "user": self.user,
            "harness": str(self.harness),
            "cwd": self.cwd,
            "host": self.host,
            "turn_state": str(self.turn_state),
            "turn": self.turn,
            "turn_inferred": self.turn_inferred,
            "incarnation": self.incarnation,
            "resume_handle": self.resume_handle,
            "transcript_path": self.transcript_path,
            "pid": self.pid,
            "jobs": [j.to_dict() for j in self.jobs],
            "unread": [r.to_dict() for r in self.unread],
            "lessons": [lesson.to_dict() for lesson in self.lessons],
            "plan": [p.to_dict() for p in self.plan],
            "plan_source": self.plan_source,
            "suspended_at": self.suspended_at,
            "resumed_at": self.resumed_at,
            "updated_at": self.updated_at,
        }
