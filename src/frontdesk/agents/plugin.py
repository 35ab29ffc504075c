"""The agents plug-in: sessions as principals, and exactly-once delivery of job reports into them.

`attach(gateway)` subscribes to the bus: a `job.report` for a job that carries a session is stored once
for that session, and the session's batch becomes due `batch_window_s` after the last report (so jobs
that end close together make one wake). The delivery loop hands due batches to the delivery service
(service.py: channels in `[agents] channels` order, leases, acknowledgements); with no channel
available the reports wait for the next hook. Nothing here blocks the event loop: subprocesses run in
threads. The routes (api.py) import the service, never this module: no import cycle.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from frontdesk.agents.campaign_service import CampaignService
from frontdesk.agents.campaign_store import MIGRATIONS as CAMPAIGN_MIGRATIONS
from frontdesk.agents.campaign_store import CampaignStore
from frontdesk.agents.channels.base import load_channels
from frontdesk.agents.framing import excerpt_lines
from frontdesk.agents.model import AgentSettings
from frontdesk.agents.procinfo import with_start
from frontdesk.agents.service import DeliveryService
from frontdesk.agents.store import MIGRATIONS, SessionStore
from frontdesk.core.quotas import Limits
from frontdesk.events.models import Event, EventKind
from frontdesk.plugins import GatewayHandle
from frontdesk.tasks import cancel_and_wait

if TYPE_CHECKING:
    from fastapi import APIRouter

    from frontdesk.config import Settings
    from frontdesk.identity import Caller
    from frontdesk.plugins import Admits, Attaches, Panel, Routes, ShowsPanel, Stops, SubmitContext
    from frontdesk.spec.model import JobSpec

__all__ = ["AgentsPlugin"]

log = logging.getLogger("frontdesk.agents")


class AgentsPlugin(DeliveryService):
    """Gateway plug-in: the delivery service (service.py) with its tables, bus subscription and loop."""

    name = "agents"

    def __init__(self, settings: Settings, clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        cfg = AgentSettings.from_section(settings.section("agents"))
        super().__init__(cfg, load_channels(cfg, home=getattr(settings, "home", None)), clock)
        self._task: asyncio.Task[None] | None = None
        self._unsubscribe: Callable[[], Any] | None = None

    # -- lifecycle --------------------------------------------------------------------------------
    def attach(self, gateway: GatewayHandle) -> None:
        """Open the tables, subscribe to the bus, start the delivery loop, resume unread batches."""
        from frontdesk.store.db import apply_schema

        self.gw = gateway
        apply_schema(gateway.store.conn, "agents", MIGRATIONS)
        self.store = SessionStore(gateway.store.conn, Limits.from_settings(self.settings))
        apply_schema(gateway.store.conn, "agents_campaign", CAMPAIGN_MIGRATIONS)
        self.campaigns = CampaignService(self.store, CampaignStore(gateway.store.conn), self.cfg, self.clock)
        self._wakeup = asyncio.Event()
        self._unsubscribe = gateway.bus.subscribe(self._on_event)
        now = self.clock()
        for key in self.store.sessions_with_unread():
            self.batcher.arrived(key, now)
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        """Stop the loop and release parked hooks (they exit quietly and the harness goes on)."""
        if self._unsubscribe:
            self._unsubscribe()
        await cancel_and_wait(self._task)
        for waiters in list(self.hooks.waiters.values()):
            for w in waiters:
                if not w.future.done():
                    w.future.set_result({"delivery": None, "stopping": True})
        self.hooks.waiters.clear()

    def admit(self, spec: JobSpec, ctx: SubmitContext) -> None:
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
        s, _ = self.store.upsert(  # the principal's own session of that id (another user's same id is another)
            ctx.principal, sid, self.clock(), ctx.harness, ctx.cwd, {k: v for k, v in reach.items() if v}
        )
        if self.campaigns is not None:
            host = extra.get("host")
            self.campaigns.on_submit(s, host if isinstance(host, str) else None)
        for ch in self.channels:  # issue 8: channels that keep their own secrets (the live inbox's token)
            capture = getattr(ch, "capture", None)
            if capture is not None:
                capture(sid, ctx.principal, extra, ctx.env)
        return None

    def turn_of(self, session: str, principal: str, spec_hash: str) -> tuple[int, int] | None:
        """The session's turn and the count of identical submissions in it (core.submission.TracksTurns)."""
        if self.campaigns is None:
            return None
        return self.campaigns.turn_of(session, principal, spec_hash)

    def panel(self, caller: Caller) -> Panel | None:
        """The web page's sessions: the caller's own (everyone's for an admin), with their unread reports."""
        from frontdesk.agents.panel import sessions_panel

        return None if self.store is None else sessions_panel(self.store, caller)

    def router(self) -> APIRouter:
        """FastAPI routes under /v1/sessions."""
        from frontdesk.agents.api import build_router

        return build_router(self)

    # -- bus --------------------------------------------------------------------------------------
    def _on_event(self, event: Event) -> None:
        if event.kind not in (EventKind.JOB_REPORT, EventKind.JOB_SUBMITTED) or not event.session:
            return
        assert self.store is not None
        now = self.clock()
        if not event.principal:
            return  # a job's events carry its submitter: a session is only ever its submitter's own
        key = (event.principal, event.session)
        try:
            self.store.upsert(*key, now)
        except Exception as exc:  # the user's cap of sessions: the report stays in the journal
            log.warning("job %s names session %s of %s: %s", event.job_id, event.session, event.principal, exc)
            return
        if event.kind is EventKind.JOB_SUBMITTED or event.job_id is None:
            return
        report = event.data.get("report") or {}
        if report.get("array_id") is not None:
            return  # a task of an array: told within the array's one report, never on its own (one wake)
        text = str(report.get("text") or f"frontdesk job {event.job_id}: {report.get('state', '?')}")
        seq = self.store.add_report(key, event.job_id, report.get("name"), str(report.get("state", "?")), text, now)
        if seq is not None:
            self._remember_output(event.job_id, text, event.principal)
            self.batcher.arrived(key, now)
            if not self.store.active_jobs(key):  # nothing else can end soon: no need to batch
                self.batcher.kick(key, now, settle_from=now - self.cfg.batch_window_s)
            self.poke()

    def _remember_output(self, job_id: int, text: str, principal: str) -> None:
        """Index the report's excerpt in its user's taint store: a command of theirs copied from it is traced and
        asked (another user's command never: guard.taint.store_home)."""
        from frontdesk.guard.taint import JOB_OUTPUT, TaintStore, store_home

        lines = excerpt_lines(text)
        home = getattr(self.settings, "home", None)
        if not lines or home is None:
            return
        try:
            store = TaintStore.open(store_home(home, principal))
            if store.record_text(lines, f"{JOB_OUTPUT} {job_id}"):
                store.save()
        except Exception:  # the guard's bookkeeping must never stop a delivery
            log.exception("could not record job %s's output for the guard", job_id)

    # -- the delivery loop ------------------------------------------------------------------------
    async def _run(self) -> None:
        assert self._wakeup is not None
        while True:
            now = self.clock()
            for key in self.batcher.due(now):
                try:
                    await self.flush(key)
                except Exception:
                    log.exception("delivery to session %s of %s failed", key[1], key[0])
                    self.batcher.failed(key, self.clock())
            nxt = self.batcher.next_due()
            timeout = None if nxt is None else max(0.0, nxt - self.clock())
            self._wakeup.clear()
            try:  # asyncio.timeout, not wait_for: on 3.11 wait_for can drop a cancel that lands as the event is set
                async with asyncio.timeout(timeout):
                    await self._wakeup.wait()
            except TimeoutError:
                pass


if TYPE_CHECKING:  # mypy checks that the plug-in fits each hook of the gateway's seam (frontdesk.plugins)

    def _fits(p: AgentsPlugin) -> tuple[Attaches, Admits, Routes, ShowsPanel, Stops]:
        return p, p, p, p, p
