"""The one orchestrator: spec → plug-ins (guard, memory, policy) → store → backend → events → report.

Runs on one asyncio loop. The backend pushes "these ids changed" hints; a tick re-queries every active
attempt in one batched call as the safety net. Dependencies, retries, fail_action and dependency
timeouts live here, so they behave the same on every backend. Every change is stored as an Event before
it is fanned out.
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import os
import sqlite3
import stat
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from frontdesk import faults
from frontdesk.backends.base import Backend, BackendJob, BackendStatus
from frontdesk.config import Settings
from frontdesk.core import arrays, ending
from frontdesk.core import wait as core_wait
from frontdesk.core.arrayaccept import sent_again
from frontdesk.core.attempt import backend_job, job_dir
from frontdesk.core.deps import Waiting
from frontdesk.core.journal import Pruner
from frontdesk.core.records import RecordSweep
from frontdesk.core.submission import (
    admit,
    job_columns,
    keyed,
    notice_list,
    resolve_deps,
    stored_context,
    submitted_events,
    tell_accepted,
    warnings,
)
from frontdesk.errors import Conflict, NotFound
from frontdesk.events.bus import Bus
from frontdesk.events.models import Event
from frontdesk.jobs.lifecycle import (
    NOTHING,
    Action,
    BackendSaid,
    DepsSeen,
    Launched,
    LaunchFailed,
    Launching,
    LaunchLost,
    PrepareFailed,
    Signal,
    Transition,
    step,
)
from frontdesk.jobs.record import JobRecord
from frontdesk.jobs.state import JobState
from frontdesk.plugins import Attaches, Redactor, SubmitContext, load_plugins, make_backend, stop_all
from frontdesk.spec.model import JobSpec
from frontdesk.store.db import open_db
from frontdesk.store.jobs import JobStore, job_record
from frontdesk.tasks import cancel_and_wait

__all__ = ["Gateway", "make_backend", "notice_list"]

log = logging.getLogger("frontdesk.gateway")


class Gateway:
    """Owns the store, the backend, the bus and the plug-ins; `redact` masks secrets in what it stores."""

    def __init__(self, settings: Settings, backend: Backend | None = None, *, redact: Redactor) -> None:
        self.settings = settings
        settings.home.mkdir(parents=True, exist_ok=True)
        os.chmod(settings.home, stat.S_IRWXU)
        faults.arm()  # FRONTDESK_FAULT, read once: kill points for the fault-injection tests
        self.plugins = load_plugins(settings)  # first: importing a plug-in registers its schema
        self.store = JobStore(open_db(settings.db_path))
        self.pruner = Pruner(settings)  # [journal] retention, validated here: a bad value stops the start
        self.backend = backend or make_backend(settings)
        self.records = RecordSweep(settings.db_path, self.backend)  # the backend's crash-recovery files, pruned
        self.bus = Bus()
        self.redact = redact
        self.loop: asyncio.AbstractEventLoop | None = None
        self._hinted: set[str] = set()
        self.waiting = Waiting()  # which waiting jobs the tick examines (core/deps.py)
        self._wake = asyncio.Event()
        self._tick_task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self.started_at = time.time()
        self.closing = False

    # -- life cycle -----------------------------------------------------------------------------------
    async def start(self) -> None:
        """Attach plug-ins, start the backend, reconcile what happened while down, start the tick."""
        self.loop = asyncio.get_running_loop()
        for plugin in self.plugins:
            if isinstance(plugin, Attaches):
                plugin.attach(self)
        await self.backend.start(self._push_hint)
        await self._recover()
        self._tick_task = self.loop.create_task(self._ticker())
        self.pruner.start()
        self.records.start()

    async def stop(self) -> None:
        """Stop the tick, the plug-ins and the backend (running jobs keep running)."""
        await self.pruner.stop()
        await self.records.stop()
        await cancel_and_wait(self._tick_task)
        await stop_all(self.plugins)
        await self.backend.stop()

    def begin_shutdown(self) -> None:
        """Called (on the loop) when a stop signal arrives: long-polls answer 503 at once instead of hanging."""
        self.closing = True
        self.bus.waiters.wake_all()
        cond = self.bus.changed

        async def _wake_all() -> None:
            async with cond:
                cond.notify_all()

        asyncio.get_running_loop().create_task(_wake_all())

    def publish(self, event: Event) -> Event:
        """Store an event, then fan it out. Returns the stored event (with seq)."""
        stored = self.store.append_event(event)
        self.bus.fanout(stored)
        return stored

    def _push_hint(self, ids: Sequence[str]) -> None:
        if self.loop is None:
            return

        def add() -> None:
            self._hinted.update(ids)
            self._wake.set()

        try:
            on_loop = asyncio.get_running_loop() is self.loop
        except RuntimeError:  # a backend's own thread
            on_loop = False
        if on_loop:  # a shepherd's end notice (read on the loop): no trip through the loop's wake-up pipe
            add()
        else:
            self.loop.call_soon_threadsafe(add)

    async def notify(self, backend: str, ids: Sequence[str]) -> int:
        """The push path (shepherds, Slurm's EpilogSlurmctld): re-query these attempts now."""
        if backend != self.backend.name:
            return 0
        return await self.refresh(list(ids))

    # -- submission -----------------------------------------------------------------------------------
    async def submit(self, spec: JobSpec, ctx: SubmitContext) -> dict[str, Any]:
        """Accept a job: idempotency, dependencies, plug-ins, store, then hand it to the backend."""
        if ctx.request_id and (sent := self.store.by_request(ctx.principal, ctx.request_id)) is not None:
            return sent_again(self, sent)  # the same request, sent again: answered as the first time
        spec = keyed(spec, ctx, self.plugins)  # issue 18: a session's replayed turn gets the job it made
        if spec.idempotency_key:
            row = self.store.by_idempotency_key(ctx.principal, spec.idempotency_key)
            if row is not None:
                return sent_again(self, row)
        deps = resolve_deps(self.store, spec.depends_on, ctx.principal)
        admission = admit(self.plugins, spec, ctx)
        context = stored_context(ctx, self.settings.section("env"))
        columns = job_columns(spec, ctx, deps, admission, context, time.time())
        if ctx.request_id:
            columns["request_id"] = ctx.request_id
        if spec.is_array:  # a parent row and its tasks in one transaction (core/arrays.py)
            return await arrays.accept_array(self, spec, ctx, columns, admission, deps)
        try:
            with self.store.transaction():  # the row and its events in one commit, sent once stored
                rec = self.store.insert_job_record(**columns, backend=self.backend.name)
                stored = [self.store.append_event(e) for e in submitted_events(rec.id, spec, ctx, admission)]
        except sqlite3.IntegrityError:  # the same key or request stored meanwhile by a concurrent call
            row = self.store.sent_before(ctx.principal, spec.idempotency_key, ctx.request_id)
            if row is None:
                raise
            return {**job_record(row), "warnings": [], "duplicate": True}
        faults.point("after_job_stored")  # stored, not answered: the client sends it again (tests/faults)
        for event in stored:
            self.bus.fanout(event)
        written = self.store.writes()
        tell_accepted(self.plugins, [rec])  # the row as stored (plug-ins keep what they need, write nothing)
        if not deps:
            await self._dispatch(rec)
        else:
            await self._advance([rec], time.time())
        said = warnings(admission.notices)  # dispatching may have changed the row: then the answer reads it once
        latest = rec if self.store.writes() == written else self._fresh(rec.id)  # a job left waiting: as inserted
        return {**job_record(latest), "warnings": said, "notices": notice_list(admission.notices)}

    # -- dispatch -------------------------------------------------------------------------------------
    def job_dir(self, job_id: int, attempt: int) -> Path:
        """The gateway's directory for one attempt (script, logs, provenance)."""
        return job_dir(self.settings, job_id, attempt)

    def _backend_job(self, row: JobRecord) -> BackendJob:
        return backend_job(row, self.settings)  # core/attempt.py: folder, script, environment, extras

    async def _dispatch(self, row: JobRecord) -> None:
        try:
            bjob = self._backend_job(row)
        except (OSError, ValueError) as exc:
            await self._step(row, PrepareFailed(str(exc), transient=_disk_full(exc)))
            return
        await self._step(row, Launching())
        try:
            bid = await self.backend.submit(bjob)
        except Exception as exc:
            log.exception("backend refused job %s", row.id)
            await self._step(self._fresh(row.id), LaunchFailed(str(exc), transient=_disk_full(exc)))
            return
        await self._step(self._fresh(row.id), Launched(bid))  # a cancel may have come in meanwhile

    def _fresh(self, job_id: int) -> JobRecord:
        rec = self.store.get(job_id)
        assert rec is not None
        return rec

    # -- state changes --------------------------------------------------------------------------------
    async def refresh(self, backend_ids: Sequence[str] | None = None) -> int:
        """Query attempts (all active ones when None) in one batched call and apply the changes."""
        async with self._lock:
            written = self.store.writes()  # unchanged when a row is stepped: nothing wrote it since it was read
            if backend_ids is None:  # the safety net: every attempt a backend holds, its row read only on news
                held = self.store.handed_over()  # (id, backend id, state, reason): no record built for 1,000 queued
                statuses = await self.backend.query([bid for _, bid, _, _ in held]) if held else {}
                news = [i for i, bid, st, why in held if _news(statuses.get(bid), st, why)]
                rows = [r for r in (self.store.get(i) for i in news) if r is not None and not r.terminal]
            else:
                rows = [r for r in self.store.by_backend_ids(self.backend.name, backend_ids) if not r.terminal]
                asked = [r.backend_id for r in rows if r.backend_id is not None]
                statuses = await self.backend.query(asked) if asked else {}
            changed = 0
            for row in rows:
                status = statuses.get(row.backend_id or "")
                if status is not None and step(row, BackendSaid(status), time.time()) != NOTHING:
                    current = row if self.store.writes() == written else self._fresh(row.id)
                    done = await self._step(current, BackendSaid(status))
                    changed += bool(done.changes or done.events)
            return changed

    async def _step(self, rec: JobRecord, signal: Signal) -> Transition:
        """Apply one lifecycle step: its writes (one transaction), its events, then its action."""
        done = step(rec, signal, time.time())
        if done.action is Action.FINISH:
            await self._end(rec, done)
            return done
        stored: list[Event] = []
        if done.changes or done.attempt is not None or done.events:  # a step that changes nothing commits nothing
            with self.store.transaction():
                if done.changes:
                    self.store.update_job(rec.id, **done.changes)
                if done.attempt is not None:
                    self.store.record_attempt(rec.id, rec.attempt, **done.attempt)
                stored = [self.store.append_event(e) for e in done.events]
        if isinstance(due := done.changes.get("eligible_at"), float) and done.action is not Action.DISPATCH:
            self.waiting.at(rec.id, due)  # a retry (backoff): the tick looks again when it is due
        for event in stored:
            self.bus.fanout(event)
        arrays.task_changed(self, rec, done.changes.get("state"))  # an array runs once a task runs
        bid = signal.backend_id if isinstance(signal, Launched) else rec.backend_id
        if done.action is Action.DISPATCH:
            await self._dispatch(self._fresh(rec.id))
        elif done.action is Action.CANCEL_BACKEND and bid is not None:
            faults.point("before_backend_cancel")  # the cancel stored, the job not yet told (tests/faults)
            await self.backend.cancel(bid)
            self._hinted.add(bid)
            self._wake.set()
        elif done.action is Action.WAKE:
            if bid is not None:
                self._hinted.add(bid)
            self._wake.set()
        return done

    async def _end(self, rec: JobRecord, done: Transition) -> None:
        """A job's end: its terminal state, report and events in one commit, then told (core/ending.py)."""
        await ending.end(self, rec, done)

    async def _finish(self, job_id: int) -> None:
        """Finish an end stored in stages: an array's, or one a crash cut short (core/ending.py)."""
        await ending.finish(self, job_id)

    # -- the tick -------------------------------------------------------------------------------------
    async def _ticker(self) -> None:
        last_full = 0.0
        while True:
            try:
                # asyncio.timeout, not wait_for: on 3.11 wait_for drops a cancel that lands as the event is set
                # (gh-86296), and a tick that missed its cancel kept `stop()` (and the process) waiting forever.
                async with asyncio.timeout(self.settings.tick_seconds):
                    await self._wake.wait()
            except TimeoutError:
                pass
            self._wake.clear()
            try:
                hinted, self._hinted = self._hinted, set()
                if hinted:
                    await self.refresh(sorted(hinted))
                full = time.time() - last_full >= self.settings.tick_seconds
                if full:
                    last_full = time.time()
                    await self.refresh(None)
                if self.waiting.pending(now := time.time()):  # a job's end, a new job or the clock (core/deps.py)
                    await self._advance(self.waiting.take(self.store, now), now)
                    if self.waiting.pending(time.time()):  # more than a tick takes (deps.TAKE_NEW): again, soon
                        self._wake.set()
                        await asyncio.sleep(0)  # the loop answers others between two ticks' takes
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("gateway tick failed")

    async def _advance(self, rows: Sequence[JobRecord], now: float) -> None:
        """Dispatch jobs whose dependencies are met or whose retry backoff ran out; end the hopeless ones."""
        rows = await arrays.dispatch_ready(self, arrays.within_limits(self, rows), now)  # tasks: %N, one call
        seen: dict[int, JobState | None] = {}  # one read per dependency a pass (1,000 jobs behind one gate)
        for row in rows:
            ids = tuple(int(d) for d in row.spec_get("depends_on", ()))
            for dep_id in ids:
                if dep_id not in seen:
                    seen[dep_id] = self.store.state_of(dep_id)
            signal = DepsSeen(tuple(seen[d] for d in ids), ids)
            if step(row, signal, now) == NOTHING:  # pure: a job that keeps waiting is neither re-read nor written
                self.waiting.kept_waiting(row, now)
                continue
            await self._step(self._fresh(row.id), signal)

    async def _recover(self) -> None:
        """After a restart: finish ends cut short, find attempts handed over mid-crash, reconcile the rest."""
        for rec in self.store.reports_pending():
            log.info("finishing the end of job %s (a crash cut it short at %s)", rec.id, rec.report_pending.name)
            await self._finish(rec.id)
        stuck = [r for r in self.store.active() if r.submitting]
        if stuck:
            keys = {f"fd-{r.id}.{r.attempt}": r for r in stuck}
            owners = {k: os.geteuid() if (u := r.runs_as()) is None else u for k, r in keys.items()}  # theirs: not ours
            found = await self.backend.lookup(list(keys), owners)
            for key, row in keys.items():
                signal: Signal = Launched(found[key]) if key in found else LaunchLost()
                await self._step(self._fresh(row.id), signal)
        await self._cancels_cut_short()
        await self.refresh(None)
        await arrays.reconcile(self)

    async def _cancels_cut_short(self) -> None:
        """A cancel answered (cancel_requested stored) whose kill a crash cut short: ask the backend again
        (a job), or cancel every task again (an array); else the job would run to its end (tests/faults)."""
        for rec in self.store.active():
            if rec.cancel_requested and rec.is_array:
                await arrays.cancel_array(self, rec)
            elif rec.cancel_requested and rec.backend_id is not None and not rec.submitting:
                await self.backend.cancel(rec.backend_id)

    # -- queries used by the API ----------------------------------------------------------------------
    def get_job(self, job_id: int) -> JobRecord:
        """A job row, or NotFound."""
        if not 0 < job_id < 2**63:  # SQLite's integers: anything else is no job, not an overflow
            raise NotFound(f"no job {job_id}")
        row = self.store.get(job_id)
        if row is None:
            raise NotFound(f"no job {job_id}")
        return row

    async def cancel(self, job_id: int) -> dict[str, Any]:
        """Cancel a job: drop it if not yet handed over, else have the backend kill its tree (it always wins)."""
        row = self.get_job(job_id)
        if row.terminal:
            raise Conflict(f"job {job_id} already ended ({row.state.value})")
        return await arrays.cancel(self, row)  # a job (CancelAsked), or every task of an array

    def report(self, job_id: int) -> dict[str, Any] | None:
        """The stored report of an ended job (None while it runs)."""
        row = self.get_job(job_id)
        return json.loads(row.report) if row.report else None

    async def wait(self, ids: Sequence[int], mode: str, timeout: float | None) -> dict[str, Any]:
        """Block until any/all of the jobs have reports, or the timeout; no client-side polling (core/wait.py)."""
        return await core_wait.wait(self, ids, mode, timeout)


def _news(status: BackendStatus | None, state: str, reason: str | None) -> bool:
    """Whether a backend's answer may change a job's row (its state, or a pending job's reason)."""
    return status is not None and (status.state.value != state or bool(status.reason and status.reason != reason))


def _disk_full(exc: BaseException) -> bool:
    """A failure that passes once space is freed (the job waits instead of failing)."""
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)
