"""Campaigns on the gateway: checkpoints from hooks, turn counts for submission keys, resume and suspend.

Pure of HTTP (the routes in agents/api.py check owners and call this). Bound at attach to the gateway's
connection (the same one as the sessions store), so every checkpoint is in the gateway's database.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from frontdesk.agents.campaign import Campaign, PlanItem, PlanStatus
from frontdesk.agents.campaign_resume import ResumePlan, build_plan
from frontdesk.agents.campaign_store import CampaignStore
from frontdesk.agents.campaign_turns import after_hook, after_submission
from frontdesk.agents.model import AgentSettings, Harness, Session, TurnState
from frontdesk.agents.store import SessionStore
from frontdesk.errors import UserError

__all__ = ["CampaignService"]

_RESUMABLE = (Harness.CLAUDE_CODE, Harness.CODEX)
_OUTSIDE_A_TURN = (TurnState.IDLE, TurnState.ENDED, TurnState.UNKNOWN)
"""A submission in these states comes from a turn whose first hooks the gateway missed (down, or restarted)."""


class CampaignService:
    """Campaign checkpoints and the resume / suspend bookkeeping of one gateway."""

    def __init__(
        self, sessions: SessionStore, store: CampaignStore, cfg: AgentSettings, clock: Callable[[], float]
    ) -> None:
        self.sessions = sessions
        self.store = store
        self.cfg = cfg
        self.clock = clock

    def on_hook(
        self,
        s: Session,
        event: str,
        plan: Sequence[tuple[str, str]] | None,
        plan_source: str | None,
        prompt_id: str | None = None,
    ) -> None:
        """Checkpoint what one hook run told: the resume handle, transcript, host, plan; the turn it is in."""
        now = self.clock()
        items = [PlanItem(text, PlanStatus.parse(status)) for text, status in plan] if plan is not None else None
        self.store.checkpoint(
            s.key,
            now,
            handle=s.id if s.harness in _RESUMABLE else None,  # Claude's session id, Codex's thread id
            transcript=s.reach.get("transcript_path"),
            host=s.reach.get("host"),
            plan=items,
            plan_source=plan_source,
        )
        mark = self.store.mark(s.key, now)
        after = after_hook(mark, event, prompt_id)
        if after != mark:
            self.store.set_mark(s.key, after, now)

    def on_submit(self, s: Session, host: str | None) -> None:
        """A job from the session: its campaign row exists and knows the node it runs on."""
        self.store.checkpoint(s.key, self.clock(), host=host)

    def load(self, s: Session) -> Campaign:
        """The session's campaign as stored now."""
        return self.store.load(s)

    def turn_of(self, sid: str, principal: str, spec_hash: str) -> tuple[int, int] | None:
        """(turn, n) for a submission key: the n-th identical submission of this turn in `principal`'s session."""
        s = self.sessions.get(principal, sid)
        if s is None:
            s, _ = self.sessions.upsert(principal, sid, self.clock())
        now = self.clock()
        mark = self.store.mark(s.key, now)
        after = after_submission(mark, idle=s.turn_state in _OUTSIDE_A_TURN)  # its prompt hook was lost
        if after != mark:
            self.store.set_mark(s.key, after, now)
        return self.store.next_ordinal(s.key, spec_hash, now)

    def resume(
        self, s: Session, *, directory: str | None, headless: bool, harness_args: Sequence[str], commit: bool
    ) -> ResumePlan:
        """The resume plan; with `commit`, recorded: a new incarnation, an unfinished turn to be replayed."""
        if directory is not None and not directory.startswith("/"):
            raise UserError(f"dir {directory!r}: an absolute path is needed")
        c = self.store.load(s)
        reports = self.sessions.unread(s.key)
        plan = build_plan(c, reports, self.cfg, directory=directory, headless=headless, harness_args=harness_args)
        if commit:
            now = self.clock()
            self.store.resumed(s.key, now, continue_turn=c.turn_unfinished)
            if directory:
                self.sessions.upsert(s.user, s.id, now, cwd=directory)
            self.sessions.set_turn(s.key, TurnState.UNKNOWN, now)
        return plan

    def suspended(self, s: Session) -> Campaign:
        """The harness was ended on purpose; its jobs run on."""
        self.store.suspended(s.key, self.clock())
        return self.store.load(s)

    def on_node(self, sessions: Sequence[Session], node: str) -> list[Session]:
        """The sessions whose harness last ran on `node`."""
        hosts = self.store.hosts([s.key for s in sessions])
        return [s for s in sessions if (hosts.get(s.key) or s.reach.get("host")) == node]
