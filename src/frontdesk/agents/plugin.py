"""The agents plug-in: sessions as principals, and exactly-once delivery of job reports into them.

`attach(gateway)` subscribes to the bus: a `job.report` for a job that carries a session is stored once
for that session, and the session's batch becomes due `batch_window_s` after the last report (so jobs
that end close together make one wake). The delivery loop tries the channels in `[agents] channels`
order (see channels/base.py); a hand-over to a hook holds a lease until the hook acknowledges, push
channels acknowledge at once, a failure falls through to the next channel and is retried with backoff,
and with no channel available the reports wait for the next hook. Every attempt is a `session.wake`
event. Nothing here blocks the event loop: subprocesses run in threads.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from frontdesk.agents.batching import Batcher
from frontdesk.agents.channels.base import Busy, Channel, Declined, choose, load_channels
from frontdesk.agents.channels.hooks import HooksChannel, Waiter
from frontdesk.agents.framing import excerpt_lines, frame_wake
from frontdesk.agents.model import AgentSettings, Session, TurnState
from frontdesk.agents.procinfo import start_time, with_start
from frontdesk.agents.store import MIGRATIONS, SessionStore
from frontdesk.events.models import Event, EventKind

__all__ = ["AgentsPlugin"]

log = logging.getLogger("frontdesk.agents")


def _process_gone(s: Session) -> bool:
    """Whether the session's registered process (pid + start time) no longer runs."""
    pid, start = s.reach.get("pid"), s.reach.get("pid_start")
    if pid is None or start is None:
        return False
    return bool(start_time(pid) != start)


class AgentsPlugin:
    """Gateway plug-in: session registry, delivery loop, `/v1/sessions` routes."""

    name = "agents"

    def __init__(self, settings: Any, clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self.cfg = AgentSettings.from_section(settings.section("agents"))
        self.clock = clock
        self.channels: list[Channel] = load_channels(self.cfg, home=getattr(settings, "home", None))
        hooks = [c for c in self.channels if isinstance(c, HooksChannel)]
        self.hooks: HooksChannel = hooks[0] if hooks else HooksChannel(self.cfg)
        self.batcher = Batcher(
            window=self.cfg.batch_window_s, max_wait=self.cfg.batch_max_s, retry_max=self.cfg.retry_max_s
        )
        self.gw: Any = None
        self.store: SessionStore | None = None
        self._wakeup: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._unsubscribe: Callable[[], Any] | None = None
        self._locks: dict[str, asyncio.Lock] = {}

    # -- lifecycle --------------------------------------------------------------------------------
    def attach(self, gateway: Any) -> None:
        """Open the tables, subscribe to the bus, start the delivery loop, resume unread batches."""
        from frontdesk.store.db import apply_schema

        self.gw = gateway
        apply_schema(gateway.store.conn, "agents", MIGRATIONS)
        self.store = SessionStore(gateway.store.conn)
        self._wakeup = asyncio.Event()
        self._unsubscribe = gateway.bus.subscribe(self._on_event)
        now = self.clock()
        for sid in self.store.sessions_with_unread():
            self.batcher.arrived(sid, now)
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        """Stop the loop and release parked hooks (they exit quietly and the harness goes on)."""
        if self._unsubscribe:
            self._unsubscribe()
        if self._task:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        for waiters in list(self.hooks.waiters.values()):
            for w in waiters:
                if not w.future.done():
                    w.future.set_result({"delivery": None, "stopping": True})
        self.hooks.waiters.clear()

    def admit(self, spec: Any, ctx: Any) -> None:
        """Register the submitting session with what the client saw (harness, cwd, tmux pane, pid)."""
        sid = getattr(spec, "session", None) or ctx.session
        if not sid or self.store is None:
            return None
        extra = ctx.extra or {}
        reach = with_start(
            {
                "pid": extra.get("agent_pid"),
                "tmux_socket": extra.get("tmux_socket"),
                "tmux_pane": extra.get("tmux_pane"),
            }
        )
        self.store.upsert(
            sid, ctx.principal, self.clock(), ctx.harness, ctx.cwd, {k: v for k, v in reach.items() if v}
        )  # another user's session id: Denied
        for ch in self.channels:  # issue 8: channels that keep their own secrets (the live inbox's token)
            capture = getattr(ch, "capture", None)
            if capture is not None:
                capture(sid, ctx.principal, extra, ctx.env)
        return None

    def router(self) -> Any:
        """FastAPI routes under /v1/sessions."""
        from frontdesk.agents.api import build_router

        return build_router(self)

    # -- bus --------------------------------------------------------------------------------------
    def _on_event(self, event: Event) -> None:
        if event.kind not in (EventKind.JOB_REPORT, EventKind.JOB_SUBMITTED) or not event.session:
            return
        assert self.store is not None
        now = self.clock()
        user = event.principal or "unknown"
        try:
            self.store.upsert(event.session, user, now)
        except Exception as exc:  # another user's session id: never deliver across users
            log.warning("job %s names session %s: %s", event.job_id, event.session, exc)
            return
        if event.kind is EventKind.JOB_SUBMITTED or event.job_id is None:
            return
        report = event.data.get("report") or {}
        text = str(report.get("text") or f"frontdesk job {event.job_id}: {report.get('state', '?')}")
        seq = self.store.add_report(
            event.session, event.job_id, report.get("name"), str(report.get("state", "?")), text, now
        )
        if seq is not None:
            self._remember_output(event.job_id, text)
            self.batcher.arrived(event.session, now)
            if not self.store.active_jobs(event.session):  # nothing else can end soon: no need to batch
                self.batcher.kick(event.session, now, settle_from=now - self.cfg.batch_window_s)
            self.poke()

    def _remember_output(self, job_id: int, text: str) -> None:
        """Index the report's excerpt in the guard's taint store: a command copied from it is traced and asked."""
        from frontdesk.guard.taint import JOB_OUTPUT, TaintStore

        lines = excerpt_lines(text)
        home = getattr(self.settings, "home", None)
        if not lines or home is None:
            return
        try:
            store = TaintStore.open(home)
            if store.record_text(lines, f"{JOB_OUTPUT} {job_id}"):
                store.save()
        except Exception:  # the guard's bookkeeping must never stop a delivery
            log.exception("could not record job %s's output for the guard", job_id)

    def poke(self) -> None:
        """Wake the delivery loop (something became due or a channel became available)."""
        if self._wakeup is not None:
            self._wakeup.set()

    def kick(self, sid: str) -> None:
        """A hook arrived or the turn state changed: reconsider this session's unread reports."""
        assert self.store is not None
        if not self.store.unread(sid):
            return
        last = self.store.last_arrival(sid)
        if not self.store.active_jobs(sid):
            last = self.clock() - self.cfg.batch_window_s
        self.batcher.kick(sid, self.clock(), settle_from=last)
        self.poke()

    # -- the delivery loop ------------------------------------------------------------------------
    async def _run(self) -> None:
        assert self._wakeup is not None
        while True:
            now = self.clock()
            for sid in self.batcher.due(now):
                try:
                    await self.flush(sid)
                except Exception:
                    log.exception("delivery to session %s failed", sid)
                    self.batcher.failed(sid, self.clock())
            nxt = self.batcher.next_due()
            timeout = None if nxt is None else max(0.0, nxt - self.clock())
            self._wakeup.clear()
            try:
                await asyncio.wait_for(self._wakeup.wait(), timeout=timeout)
            except TimeoutError:
                pass

    def _wake_event(
        self, s: Session, channel: str | None, job_ids: Sequence[int], ok: bool, error: str | None = None
    ) -> None:
        data: dict[str, Any] = {"channel": channel, "jobs": list(job_ids), "ok": ok}
        if error:
            data["error"] = error
        try:
            self.gw.publish(Event(EventKind.SESSION_WAKE, session=s.id, principal=s.user, data=data))
        except Exception:
            log.exception("could not record the wake of session %s", s.id)

    async def flush(self, sid: str) -> None:
        """Deliver the session's unread reports through the first channel that takes them."""
        lock = self._locks.setdefault(sid, asyncio.Lock())
        async with lock:
            await self._flush(sid)

    async def _flush(self, sid: str) -> None:
        assert self.store is not None
        s = self.store.get(sid)
        now = self.clock()
        if s is None:
            self.batcher.done(sid)
            return
        if s.lease_until > now:
            self.batcher.defer(sid, s.lease_until + 0.01)
            return
        reports = self.store.unread(sid)
        if not reports:
            self.batcher.done(sid)
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
                self.store.note(sid, ch.name, f"busy: {busy}")
                self.batcher.defer(sid, self.clock() + max(self.cfg.batch_window_s, 1.0))
                return
            except Declined as no:
                declined.append(f"{ch.name} declined: {no}")
                self._wake_event(s, ch.name, job_ids, False, declined[-1])
                continue
            except Exception as exc:
                log.warning("channel %s failed for session %s: %s", ch.name, sid, exc)
                ok = False
            if ok and ch.confirms_later:
                self.store.lease(sid, upto, self.clock() + self.cfg.lease_s)
                self.store.note(sid, ch.name, "handed to a waiting hook")
                self.batcher.defer(sid, self.clock() + self.cfg.lease_s + 0.01)
                return
            if ok:
                self.acknowledge(s, upto, ch.name)
                self.batcher.done(sid)
                return
            self._wake_event(s, ch.name, job_ids, False, "delivery failed")
        if usable:
            due = self.batcher.failed(sid, self.clock())
            why = f" ({'; '.join(declined)})" if declined else ""
            self.store.note(sid, None, f"every channel failed{why}; retry in {due - self.clock():.0f}s")
        else:
            self.batcher.park(sid)
            self.store.note(sid, None, "waiting for the next hook (" + "; ".join(reasons) + ")")

    def acknowledge(self, s: Session, upto: int, channel: str) -> list[int]:
        """Advance the cursor; one `session.wake` event naming the jobs."""
        assert self.store is not None
        jobs = self.store.ack(s.id, upto, channel, self.clock())
        if jobs:
            self.store.note(s.id, channel, f"delivered jobs {', '.join(map(str, jobs))}")
            self._wake_event(s, channel, jobs, True)
        return jobs

    def mark_read(self, s: Session, jobs: Sequence[int], via: str) -> list[int]:
        """The session read these reports itself: delivered, and no hook or wake brings them again."""
        assert self.store is not None
        marked = self.store.mark_read(s.id, jobs, f"read:{via}", self.clock())
        if marked:
            self.store.note(s.id, f"read:{via}", f"read by the session: jobs {', '.join(map(str, marked))}")
            self._wake_event(s, f"read:{via}", marked, True)
        return marked

    # -- hook long-polls (called by the API) --------------------------------------------------------
    def adopt_ended(self, s: Session) -> str | None:
        """A new session takes the unread reports of ended sessions of its user in its directory (issue 19).

        Ended means SessionEnd was seen, or its registered process (pid + start time) is gone; a session
        whose process is unknown is left alone. Returns a line for the model naming where they came from.
        """
        assert self.store is not None
        if not s.cwd:
            return None
        moved: list[tuple[str, list[int]]] = []
        for old in self.store.with_unread_in(s.user, s.cwd, s.id):
            if old.turn_state is not TurnState.ENDED and not _process_gone(old):
                continue
            jobs = self.store.move_unread(old.id, s.id)
            if jobs:
                self.store.note(old.id, None, f"session ended: jobs {', '.join(map(str, jobs))} handed to {s.id}")
                moved.append((old.id, jobs))
        if not moved:
            return None
        names = "; ".join(f"{sid} (jobs {', '.join(map(str, jobs))})" for sid, jobs in moved)
        head = "[frontdesk] Reports below include jobs submitted by an earlier session in this project"
        return f"{head} that has ended: {names}."

    def claim_now(self, s: Session, note: str | None = None) -> dict[str, Any]:
        """Hand every unread report to the calling hook at once (SessionStart, UserPromptSubmit)."""
        assert self.store is not None
        now = self.clock()
        if s.lease_until > now:
            return {"delivery": None, "reason": "another hook holds these reports"}
        reports = self.store.unread(s.id)
        if not reports:
            return {"delivery": None}
        self.store.lease(s.id, reports[-1].seq, now + self.cfg.lease_s)
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
        self.hooks.park(s.id, waiter)
        self.kick(s.id)
        last = self.store.last_arrival(s.id)
        if last is not None:
            settle = last + self.cfg.batch_window_s - self.clock()
            if not self.store.active_jobs(s.id):
                settle = 0.0
            if settle <= 0:
                await self.flush(s.id)  # a settled batch goes to this hook now
            timeout = max(timeout, settle + 0.5)  # a batch still settling arrives within the wait
        try:
            return await asyncio.wait_for(asyncio.shield(waiter.future), timeout=max(timeout, 0.0))
        except TimeoutError:
            self.hooks.unpark(s.id, waiter)
            if waiter.future.done():
                return waiter.future.result()
            return {"delivery": None, "timeout": True}

    def set_turn(self, s: Session, state: TurnState, reset_blocks: bool = False) -> None:
        """Record the turn state; an idle or ended session may now take a waiting batch."""
        assert self.store is not None
        self.store.set_turn(s.id, state, self.clock(), reset_blocks=reset_blocks)
        if state in (TurnState.IDLE, TurnState.ENDED):
            self.kick(s.id)
