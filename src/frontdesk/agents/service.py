"""The delivery service: which channel carries a session's unread reports, and what each hook run gets.

Pure of HTTP: the `/v1/sessions` routes (agents/api.py) only parse bodies and check owners, then call
this; the plug-in (agents/plugin.py) owns its lifecycle (tables, bus, the delivery loop). A hand-over to
a hook holds a lease until the hook acknowledges, push channels acknowledge at once, a channel that
declines passes to the next, and every attempt is a `session.wake` event.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from frontdesk.agents.batching import Batcher
from frontdesk.agents.campaign_service import CampaignService
from frontdesk.agents.channels.base import Busy, Channel, Declined, choose
from frontdesk.agents.channels.hooks import HooksChannel, Waiter
from frontdesk.agents.delivery import live_channel
from frontdesk.agents.framing import frame_wake
from frontdesk.agents.handover import adopt_ended
from frontdesk.agents.model import AgentSettings, Session, SessionKey, TurnState
from frontdesk.agents.procinfo import with_start
from frontdesk.agents.store import SessionStore
from frontdesk.errors import UserError
from frontdesk.events.models import Event, EventKind

if TYPE_CHECKING:
    from frontdesk.agents.campaign_resume import ResumePlan
    from frontdesk.plugins import GatewayHandle

__all__ = ["DeliveryService", "HookCall"]

log = logging.getLogger("frontdesk.agents")


@dataclass(frozen=True)
class HookCall:
    """One hook run, as the route parsed it (the session's registration and plan with it)."""

    event: str
    budget: float
    stop_hook_active: bool = False
    harness: str | None = None
    cwd: str | None = None
    reach: dict[str, Any] = field(default_factory=dict)
    plan: list[tuple[str, str]] | None = None
    plan_source: str | None = None
    prompt_id: str | None = None


class DeliveryService:
    """Sessions' unread reports to channels and hooks; the store and the publisher are bound at attach."""

    def __init__(self, cfg: AgentSettings, channels: list[Channel], clock: Callable[[], float]) -> None:
        self.cfg = cfg
        self.clock = clock
        self.channels = channels
        hooks = [c for c in channels if isinstance(c, HooksChannel)]
        self.hooks: HooksChannel = hooks[0] if hooks else HooksChannel(cfg)
        self.batcher = Batcher[SessionKey](
            window=cfg.batch_window_s, max_wait=cfg.batch_max_s, retry_max=cfg.retry_max_s
        )
        self.gw: GatewayHandle | None = None
        self.store: SessionStore | None = None
        self.campaigns: CampaignService | None = None  # issue 18: bound at attach, like the store
        self._wakeup: asyncio.Event | None = None
        self._locks: dict[SessionKey, asyncio.Lock] = {}

    def poke(self) -> None:
        """Wake the delivery loop (something became due or a channel became available)."""
        if self._wakeup is not None:
            self._wakeup.set()

    def kick(self, key: SessionKey) -> None:
        """A hook arrived or the turn state changed: reconsider this session's unread reports."""
        assert self.store is not None
        if not self.store.unread(key):
            return
        last = self.store.last_arrival(key)
        if not self.store.active_jobs(key):
            last = self.clock() - self.cfg.batch_window_s
        self.batcher.kick(key, self.clock(), settle_from=last)
        self.poke()

    def _wake_event(
        self, s: Session, channel: str | None, job_ids: Sequence[int], ok: bool, error: str | None = None
    ) -> None:
        data: dict[str, Any] = {"channel": channel, "jobs": list(job_ids), "ok": ok}
        if error:
            data["error"] = error
        if self.gw is None:
            return
        try:
            self.gw.publish(Event(EventKind.SESSION_WAKE, session=s.id, principal=s.user, data=data))
        except Exception:
            log.exception("could not record the wake of session %s", s.id)

    async def flush(self, key: SessionKey) -> None:
        """Deliver the session's unread reports through the first channel that takes them."""
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            await self._flush(key)

    async def _flush(self, key: SessionKey) -> None:
        assert self.store is not None
        s = self.store.get(*key)
        now = self.clock()
        if s is None:
            self.batcher.done(key)
            return
        if s.lease_until > now:
            self.batcher.defer(key, s.lease_until + 0.01)
            return
        reports = self.store.unread(key)
        if not reports:
            self.batcher.done(key)
            return
        text = frame_wake(reports)
        job_ids = [r.job_id for r in reports]
        upto = reports[-1].seq
        usable, reasons = choose(self.channels, s)
        if self.hooks in usable and self.hooks.stop_waiting(s):
            # a Stop hook is holding the end of this very turn: hand it over there, in the turn
            usable.remove(self.hooks)
            usable.insert(0, self.hooks)
        declined: list[str] = []
        for ch in usable:
            try:
                ok = await ch.deliver(s, text, job_ids)
            except Busy as busy:
                self.store.note(key, ch.name, f"busy: {busy}")
                self.batcher.defer(key, self.clock() + max(self.cfg.batch_window_s, 1.0))
                return
            except Declined as no:
                declined.append(f"{ch.name} declined: {no}")
                self._wake_event(s, ch.name, job_ids, False, declined[-1])
                continue
            except Exception as exc:
                log.warning("channel %s failed for session %s of %s: %s", ch.name, s.id, s.user, exc)
                ok = False
            if ok and ch.confirms_later:
                self.store.lease(key, upto, self.clock() + self.cfg.lease_s)
                self.store.note(key, ch.name, "handed to a waiting hook")
                self.batcher.defer(key, self.clock() + self.cfg.lease_s + 0.01)
                return
            if ok:
                self.acknowledge(s, upto, ch.name)
                self.batcher.done(key)
                return
            self._wake_event(s, ch.name, job_ids, False, "delivery failed")
        if usable:
            due = self.batcher.failed(key, self.clock())
            why = f" ({'; '.join(declined)})" if declined else ""
            self.store.note(key, None, f"every channel failed{why}; retry in {due - self.clock():.0f}s")
        else:
            self.batcher.park(key)
            self.store.note(key, None, "waiting for the next hook (" + "; ".join(reasons) + ")")

    def acknowledge(self, s: Session, upto: int, channel: str) -> list[int]:
        """Advance the cursor; one `session.wake` event naming the jobs."""
        assert self.store is not None
        jobs = self.store.ack(s.key, upto, channel, self.clock())
        if jobs:
            self.store.note(s.key, channel, f"delivered jobs {', '.join(map(str, jobs))}")
            self._wake_event(s, channel, jobs, True)
        return jobs

    def mark_read(self, s: Session, jobs: Sequence[int], via: str) -> list[int]:
        """The session read these reports itself: delivered, and no hook or wake brings them again."""
        assert self.store is not None
        marked = self.store.mark_read(s.key, jobs, f"read:{via}", self.clock())
        if marked:
            self.store.note(s.key, f"read:{via}", f"read by the session: jobs {', '.join(map(str, marked))}")
            self._wake_event(s, f"read:{via}", marked, True)
        return marked

    # -- hook long-polls (called by the API) --------------------------------------------------------
    def claim_now(self, s: Session, note: str | None = None) -> dict[str, Any]:
        """Hand every unread report to the calling hook at once (SessionStart, UserPromptSubmit)."""
        assert self.store is not None
        now = self.clock()
        if s.lease_until > now:
            return {"delivery": None, "reason": "another hook holds these reports"}
        reports = self.store.unread(s.key)
        if not reports:
            return {"delivery": None}
        self.store.lease(s.key, reports[-1].seq, now + self.cfg.lease_s)
        text = frame_wake(reports)
        return {"delivery": True, "text": f"{note}\n\n{text}" if note else text, "jobs": [r.job_id for r in reports]}

    def stop_wait_seconds(self, s: Session, budget: float, active: list[dict[str, Any]]) -> float:
        """How long the Stop hook may hold the turn: to the latest walltime end (+grace), within budget."""
        now = self.clock()
        ends = []
        for job in active:
            wall = job.get("walltime_s")
            if not wall:
                return budget
            start = job.get("started_at") or now
            ends.append(max(0.0, float(start) + float(wall) - now))
        need = (max(ends) if ends else 0.0) + self.cfg.stop_grace_s
        return max(0.0, min(budget, need))

    async def wait_for_reports(self, s: Session, role: str, timeout: float) -> dict[str, Any]:
        """Park a hook until the delivery loop hands it a batch, or `timeout` passes."""
        assert self.store is not None
        loop = asyncio.get_running_loop()
        waiter = Waiter(role=role, idle_only=(role == "rewake"), future=loop.create_future())
        self.hooks.park(s.key, waiter)
        self.kick(s.key)
        last = self.store.last_arrival(s.key)
        if last is not None:
            settle = last + self.cfg.batch_window_s - self.clock()
            if not self.store.active_jobs(s.key):
                settle = 0.0
            if settle <= 0:
                await self.flush(s.key)  # a settled batch goes to this hook now
            timeout = max(timeout, settle + 0.5)  # a batch still settling arrives within the wait
        try:
            async with asyncio.timeout(max(timeout, 0.0)):  # not wait_for: a shutdown's cancel must not be lost
                return await asyncio.shield(waiter.future)
        except TimeoutError:
            self.hooks.unpark(s.key, waiter)
            if waiter.future.done():
                return waiter.future.result()
            return {"delivery": None, "timeout": True}

    def set_turn(self, s: Session, state: TurnState, reset_blocks: bool = False) -> None:
        """Record the turn state; an idle or ended session may now take a waiting batch."""
        assert self.store is not None
        self.store.set_turn(s.key, state, self.clock(), reset_blocks=reset_blocks)
        if state in (TurnState.IDLE, TurnState.ENDED):
            self.kick(s.key)

    # -- what the routes call -------------------------------------------------------------------------
    def attached(self) -> SessionStore:
        """The session store; a UserError before the plug-in is attached."""
        if self.store is None:
            raise UserError("the agents plug-in is not attached")
        return self.store

    def campaign_service(self) -> CampaignService:
        """The campaign service; a UserError before the plug-in is attached."""
        if self.campaigns is None:
            raise UserError("the agents plug-in is not attached")
        return self.campaigns

    def sessions_of(self, user: str, everyone: bool, node: str | None, admin: bool = False) -> list[Session]:
        """The user's sessions (everyone's for root or an admin asking for all), those on `node` only if given."""
        rows = self.attached().list_sessions(None if (everyone and (admin or user == "root")) else user)
        return rows if node is None else self.campaign_service().on_node(rows, node)

    def unread_view(self, s: Session) -> dict[str, Any]:
        """The session's unread reports and the text a wake would carry."""
        reps = self.attached().unread(s.key)
        return {"session": s.id, "reports": [r.__dict__ for r in reps], "text": frame_wake(reps)}

    def ack_jobs(self, s: Session, jobs: Sequence[int], upto: int | None, channel: str) -> list[int]:
        """Acknowledge up to `upto`, or up to the latest unread report of `jobs` when no cursor is given."""
        if upto is None:
            seqs = [r.seq for r in self.attached().unread(s.key) if r.job_id in set(jobs)]
            upto = max(seqs) if seqs else None
        return [] if upto is None else self.acknowledge(s, upto, channel)

    def resume(
        self, s: Session, directory: str | None, headless: bool, args: Sequence[str], commit: bool
    ) -> ResumePlan:
        """The campaign's resume plan; a committed one hands the session's reports over to the new incarnation."""
        got = self.campaign_service().resume(
            s, directory=directory, headless=headless, harness_args=args, commit=commit
        )
        if commit and got.upto_seq is not None:
            self.acknowledge(s, got.upto_seq, "resume")
        return got

    async def hook_run(self, user: str, sid: str, call: HookCall) -> dict[str, Any]:
        """One hook run: the session registered, the campaign checkpointed (before a long-poll), then on_hook."""
        self.attached()
        s = self.register(user, sid, call.harness, call.cwd, {**call.reach, "hooks_seen": True})
        self.campaign_service().on_hook(s, call.event, call.plan, call.plan_source, call.prompt_id)  # issue 18
        if call.event == "PostToolUse":  # only the plan: the turn goes on
            return {"session": s.id, "delivery": None}
        return await self.on_hook(s, call)

    def register(self, user: str, sid: str, harness: str | None, cwd: str | None, reach: dict[str, Any]) -> Session:
        """Register or refresh `user`'s session `sid` (its pid with its start time); a new one is an event."""
        assert self.store is not None
        s, created = self.store.upsert(user, sid, self.clock(), harness, cwd, with_start(reach))
        if created and self.gw is not None:
            data = {"session": s.id, "harness": str(s.harness), "user": s.user}
            self.gw.publish(Event(EventKind.SESSION_REGISTERED, session=s.id, principal=s.user, data=data))
        return s

    async def on_hook(self, s: Session, call: HookCall) -> dict[str, Any]:
        """What one hook run gets: the turn state recorded, and reports now (or after a long-poll)."""
        assert self.store is not None
        st = self.store
        active = st.active_jobs(s.key)
        base = {"session": s.id, "active_jobs": active}
        if call.event == "SessionEnd":
            self.hooks.release(s.key)
            self.set_turn(s, TurnState.ENDED)
            return {**base, "delivery": None}
        if call.event == "notify":
            self.set_turn(s, TurnState.IDLE)
            return {**base, "delivery": None}
        if call.event in ("SessionStart", "UserPromptSubmit"):
            state = TurnState.IN_TURN if call.event == "UserPromptSubmit" else TurnState.IDLE
            st.set_turn(s.key, state, self.clock(), reset_blocks=True)
            note = adopt_ended(st, s) if call.event == "SessionStart" else None
            got = self.claim_now(self._get(s.key), note)
            return {**base, **got, "unread": len(st.unread(s.key))}
        if call.event == "rewake":
            if not active and not st.unread(s.key):
                self.hooks.release(s.key, "rewake")  # an older background hook has nothing to wait for
                return {**base, "delivery": None, "reason": "nothing running or unread"}
            return {**base, **await self.wait_for_reports(self._get(s.key), "rewake", call.budget)}
        return {**base, **await self._on_stop(s, call, active)}

    async def _on_stop(self, s: Session, call: HookCall, active: list[dict[str, Any]]) -> dict[str, Any]:
        """Stop / SubagentStop: hold the ending turn for a report, within the cap (issue 19)."""
        assert self.store is not None
        st = self.store
        if s.stop_blocks >= self.cfg.max_stop_blocks:
            self.set_turn(s, TurnState.IDLE)
            return {"delivery": None, "reason": f"{s.stop_blocks} blocks in a row: letting it stop"}
        if not active and not st.unread(s.key):
            self.hooks.release(s.key, "rewake")
            self.set_turn(s, TurnState.IDLE)
            return {"delivery": None, "reason": "nothing running or unread"}
        st.set_turn(s.key, TurnState.STOPPING, self.clock())
        wait_s = 0.0 if call.stop_hook_active else self.stop_wait_seconds(s, call.budget, active)
        attended = s.reach.get("attended", True)  # `claude -p` (unattended) exits after its turn: hold it
        if attended and live_channel(self.channels, s) is not None:
            wait_s = 0.0  # issue 8: a live inbox wakes the idle session later; do not hold its turn open
        elif attended:
            wait_s = min(wait_s, self.cfg.stop_hold_s)  # issue 19: then the rewake hook / next turn takes it
        got = await self.wait_for_reports(self._get(s.key), "stop", wait_s)
        if got.get("delivery"):
            st.count_block(s.key)
            st.set_turn(s.key, TurnState.IN_TURN, self.clock())
        else:
            self.set_turn(s, TurnState.IDLE)
        return {**got, "waited_s": wait_s}

    def _get(self, key: SessionKey) -> Session:
        assert self.store is not None
        got = self.store.get(*key)
        assert got is not None
        return got

    def view(self, s: Session) -> dict[str, Any]:
        """A session as `frontdesk sessions` shows it: record, jobs, unread, channels and the route."""
        from frontdesk.agents.delivery import route_line

        assert self.store is not None
        active = self.store.active_jobs(s.key)
        usable, reasons = choose(self.channels, s)
        return {
            **s.to_dict(),
            "active_jobs": active,
            "running": len(active),
            "unread": self.store.unread_counts([s.key])[s.key],
            "channel": usable[0].name if usable else None,
            "channels": reasons,
            "route": route_line(self.channels, s),
        }
