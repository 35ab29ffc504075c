"""The policy plug-in: classifies, routes and prioritises every submission; runs the embedded picker;
keeps policy versions; watches node health. The decisions themselves are the pure functions of `policy/`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from frontdesk.backends.base import OrdersItsQueue, Reprioritises
from frontdesk.errors import ConfigError, FrontdeskError, NotFound
from frontdesk.events.models import Event, EventKind
from frontdesk.jobs.record import JobRecord
from frontdesk.jobs.state import JobState
from frontdesk.plugins import Admission, GatewayHandle, Json, Notice, Panel, SubmitContext
from frontdesk.policy.classify import classify
from frontdesk.policy.config import PolicyConfig, parse_policy
from frontdesk.policy.embedded import JobMeta, make_picker
from frontdesk.policy.health import Verdict, evaluate
from frontdesk.policy.priority import FairshareLedger, level, slurm_priority
from frontdesk.policy.trial import Revocation, TrialLedger
from frontdesk.policy.views import Revoked, cluster_view, gpu_models, policy_panel
from frontdesk.reports.model import PolicySection, Report

if TYPE_CHECKING:
    import sqlite3

    from fastapi import APIRouter

    from frontdesk.config import Settings
    from frontdesk.identity import Caller
    from frontdesk.plugins import Accepts, Admits, Attaches, Enriches, Routes, ShowsCluster, ShowsPanel, Stops
    from frontdesk.policy.history import PolicyHistory
    from frontdesk.spec.model import JobSpec

__all__ = ["PolicyPlugin"]

log = logging.getLogger("frontdesk.policy")


def _hour(now: float) -> float:
    t = time.localtime(now)
    return t.tm_hour + t.tm_min / 60


class PolicyPlugin:
    """See the module docstring."""

    name = "policy"

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.gateway: GatewayHandle | None = None
        self.history: PolicyHistory | None = None
        self.raw: dict[str, Any] = settings.section("policy")
        self.refused: str | None = None
        try:
            self.cfg = parse_policy(self.raw, self._source())
        except ConfigError as exc:  # refused whole: the version in the database stays in force (attach)
            self.refused, self.cfg = exc.message, PolicyConfig()
        self.version = 0
        self.trials = TrialLedger(self.cfg.trial)
        self.shares = FairshareLedger(float(self.cfg.priority.fairshare_half_life))
        self.meta: dict[int, JobMeta] = {}
        self.drained: dict[str, Verdict] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._file_sig: tuple[float, int] | None = None

    def _source(self) -> str:
        return str(self.settings.config_file) if self.settings.config_file else "defaults"

    # -- life cycle -----------------------------------------------------------------------------------
    def attach(self, gateway: GatewayHandle) -> None:
        """Load the policy version, install the picker on the embedded backend, start watchers."""
        from frontdesk.policy.history import MIGRATIONS, PolicyHistory
        from frontdesk.store.db import apply_schema

        self.gateway = gateway
        apply_schema(gateway.store.conn, "policy", MIGRATIONS)
        self.history = PolicyHistory(gateway.store.conn)
        if self.refused:
            self._refuse(self.refused)
        else:
            self._activate(self.raw, self.cfg, self._source())
        self._restore_revocations(gateway.store.conn)
        for rec in gateway.store.active():  # what admission decided, stored with each job: nothing lost on restart
            self.on_accepted(rec)
        backend = gateway.backend
        if isinstance(backend, OrdersItsQueue):
            backend.scheduler = make_picker(
                lambda: self.cfg, self.meta, self.shares, _hour, lambda: "local" in self.drained
            )
            backend.hold_reason = lambda: self.drain_reason("local")  # PENDING says why
        self._file_sig = self._stat()
        loop = asyncio.get_running_loop()  # attach runs on the gateway's loop (Gateway.start)
        self._tasks = [loop.create_task(self._watch()), loop.create_task(self._health())]
        if isinstance(backend, Reprioritises):  # Slurm: levels move while jobs wait, Slurm must hear it
            self._tasks.append(loop.create_task(self._reprioritise_loop()))

    def _restore_revocations(self, conn: sqlite3.Connection) -> None:
        import json

        now = time.time()
        rows = conn.execute(
            "SELECT data FROM events WHERE kind=? AND ts > ?",
            (str(EventKind.POLICY_TRIAL_REVOKED), now - 7 * 86400),
        ).fetchall()
        for row in rows:
            data = json.loads(row[0])
            if float(data.get("until", 0)) > now:
                self.trials.restore(str(data["principal"]), str(data.get("reason", "")), float(data["until"]))

    def check_start(self, conn: sqlite3.Connection) -> None:
        """ConfigError when `[policy]` is refused and no earlier version can stay in force: a gateway's first
        start on a misspelt or mistyped policy would otherwise run the defaults with only a log line."""
        from frontdesk.policy.history import MIGRATIONS, PolicyHistory
        from frontdesk.store.db import apply_schema

        if self.refused is None:
            return
        apply_schema(conn, "policy", MIGRATIONS)
        if PolicyHistory(conn).active() is None:
            raise ConfigError(f"[policy]: {self.refused}")

    def stop(self) -> None:
        """Stop the watchers."""
        for task in self._tasks:
            task.cancel()

    def _refuse(self, message: str) -> None:
        act = self.history.active() if self.history else None
        if act:
            self.cfg, self.raw, self.version = parse_policy(act["config"]), act["config"], int(act["version"])
            self._reset_ledgers()
        log.error("policy refused, version %s stays in force: %s", self.version, message)
        if self.gateway:
            self.gateway.publish(
                Event(
                    EventKind.POLICY_LOADED,
                    data={"version": self.version, "refused": message, "source": self._source()},
                )
            )

    def _activate(self, raw: dict[str, Any], cfg: PolicyConfig, source: str) -> int:
        assert self.history is not None, "attach() first"
        version, new = self.history.record(raw, source, time.time())
        self.cfg, self.raw, self.version, self.refused = cfg, raw, int(version), None
        self._reset_ledgers()
        if new and self.gateway:
            self.gateway.publish(Event(EventKind.POLICY_LOADED, data={"version": version, "source": source}))
        return int(version)

    def _reset_ledgers(self) -> None:
        self.trials.cfg = self.cfg.trial
        self.shares.half_life = float(self.cfg.priority.fairshare_half_life)

    # -- versions -------------------------------------------------------------------------------------
    def reload(self) -> dict[str, int]:
        """Re-read `[policy]` from the config file; an invalid one is refused whole (ConfigError)."""
        from frontdesk.config import read_toml

        path = self.settings.config_file
        raw: dict[str, Any] = {}
        if path is not None:
            try:
                data = read_toml(path)
            except ConfigError as exc:
                self._refuse(exc.message)
                raise
            raw = data.get("policy", {}) if isinstance(data.get("policy", {}), dict) else {}
        try:
            cfg = parse_policy(raw, self._source())
        except ConfigError as exc:
            self._refuse(exc.message)
            raise
        return {"version": self._activate(raw, cfg, self._source())}

    def rollback(self, version: int) -> dict[str, int]:
        """Put an earlier version back in force (recorded as a new version)."""
        old = self.history.get(version) if self.history is not None else None
        if old is None:
            raise NotFound(f"no policy version {version}")
        cfg = parse_policy(old["config"], f"policy version {version}")
        return {"version": self._activate(old["config"], cfg, f"rollback to {version}"), "from": version}

    def _stat(self) -> tuple[float, int] | None:
        path = self.settings.config_file
        try:
            st = path.stat() if path else None
        except OSError:
            return None
        return (st.st_mtime, st.st_size) if st else None

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            sig = self._stat()
            if sig is not None and sig != self._file_sig:
                self._file_sig = sig
                try:
                    self.reload()
                except FrontdeskError:
                    pass  # refused and logged; the old version stays

    # -- the MLFQ on Slurm -----------------------------------------------------------------------------
    async def _reprioritise_loop(self) -> None:
        while True:
            await asyncio.sleep(self.cfg.priority.reprioritise_every)
            try:
                await self.reprioritise(time.time())
            except Exception:
                log.exception("re-prioritising waiting Slurm jobs failed")

    async def reprioritise(self, now: float) -> int:
        """Recompute every waiting job's level (agent jobs drop, training jobs age up) and push the changes."""
        if self.gateway is None or not isinstance(self.gateway.backend, Reprioritises):
            return 0
        store, backend = self.gateway.store, self.gateway.backend
        changed = 0
        for row in store.select(state=[JobState.PENDING.value], limit=100000):
            meta = self.meta.get(row.id)
            if row.backend_id is None or meta is None:
                continue
            fair = self.shares.snapshot(now, self.cfg.priority.principal_weight).factor(meta.principal, meta.group)
            lvl = level(meta.job_class, meta.trial, now - row.submitted_at, self.cfg.priority)
            priority = lvl * 1000 + int(max(0.0, min(fair, 1.0)) * 999)
            if priority != row.priority:
                await backend.set_priority(row.backend_id, priority)
                store.update_job(row.id, priority=priority)
                changed += 1
        return changed

    # -- health ---------------------------------------------------------------------------------------
    async def _health(self) -> None:
        from frontdesk.policy.probe import read_local

        while True:
            try:
                reading = await asyncio.to_thread(read_local, self.cfg.health, self.settings.home)
                self.set_health(evaluate(reading, self.cfg.health))
            except Exception:
                log.exception("health check failed to run")
            await asyncio.sleep(self.cfg.health.interval)

    def drain_reason(self, node: str) -> str | None:
        """The pending reason while a node is drained (naming the check, e.g. low disk space), else None."""
        v = self.drained.get(node)
        if v is None:
            return None
        what = {"free_disk": "low disk space", "gpu_temperature": "GPU too hot"}.get(v.check, v.check)
        return f"Drained: {what}, {v.detail}"

    def set_health(self, verdict: Verdict) -> None:
        """Drain or return a node; a new drain is published as an event."""
        was = verdict.node in self.drained
        if verdict.drained:
            self.drained[verdict.node] = verdict
            if not was:
                log.warning("node %s drained, new jobs wait: %s", verdict.node, self.drain_reason(verdict.node))
            if not was and self.gateway:
                self.gateway.publish(
                    Event(
                        EventKind.NODE_DRAINED,
                        data={"node": verdict.node, "check": verdict.check, "detail": verdict.detail},
                    )
                )
        elif was:
            del self.drained[verdict.node]

    # -- admission ------------------------------------------------------------------------------------
    def admit(self, spec: JobSpec, ctx: SubmitContext) -> Admission:
        """Class and reason, pool (partition), QOS, priority; the trial verdict as a notice."""
        res = spec.resources
        declared = spec.type.value if spec.type else None
        job_class, reason = classify(declared, res.cpus, res.gpus, res.walltime, self.cfg.classify)
        notices: list[Notice] = []
        granted = False
        now = time.time()
        if spec.trial:
            verdict = self.trials.request(
                ctx.principal, spec.template(), res.cpus, res.gpus, res.memory or 0, res.walltime, now
            )
            granted = verdict.granted
            if verdict.revocation:
                self._revoked(verdict.revocation)
            if not granted:
                notices.append(Notice("policy", f"trial privilege not applied: {verdict.reason}", {"trial": False}))
        if "local" in self.drained:
            notices.append(Notice("policy", f"this job will wait: {self.drain_reason('local')}", {"drained": True}))
        named = self.cfg.pool_named(spec.pool)
        pool = named or self.cfg.pool_for("agent" if granted else job_class)
        if pool.partition:
            partition: str | None = pool.partition
        elif spec.pool and named is None:
            partition = spec.pool  # a partition the policy does not know: the submitter's choice stands
        elif "pools" in self.raw:
            partition = pool.name
        else:
            partition = None  # no pools configured: the backend's default partition
        group = ctx.groups[0] if ctx.groups else ""
        fair = self.shares.snapshot(now, self.cfg.priority.principal_weight).factor(ctx.principal, group)
        meta = JobMeta(job_class, pool.name, granted, ctx.principal, group, reason)
        return Admission(
            meta=asdict(meta),  # stored with the job (jobs.plugin_meta), read back by on_accepted
            notices=notices,
            job_class=job_class,
            class_reason=reason,
            partition=partition,
            qos=pool.qos,
            priority=slurm_priority(job_class, granted, fair, self.cfg.priority),
        )

    def _revoked(self, rev: Revocation) -> None:
        if self.gateway:
            self.gateway.publish(
                Event(
                    EventKind.POLICY_TRIAL_REVOKED,
                    principal=rev.principal,
                    data={"principal": rev.principal, "reason": rev.reason, "until": rev.until},
                )
            )

    def on_accepted(self, job: JobRecord) -> None:
        """The job is stored: keep what admission decided for the picker, reprioritising and the report."""
        stored = job.meta(self.name)
        if stored:
            self.meta[job.id] = JobMeta(**stored)

    def enrich(self, job: JobRecord, report: Report) -> Report:
        """Account for the ended job (fairshare, trial ledger); add class, pool and trial (`extra.policy`)."""
        meta = self.meta.pop(job.id, None)
        run_s = float(report.run_s or 0.0)
        req = report.requested
        now = time.time()
        group = meta.group if meta else ""
        self.shares.charge(job.principal, group, float(req.cpus or 1), float(req.gpus or 0), run_s, now)
        section = PolicySection(
            job_class=job.job_class,
            pool=meta.pool if meta else job.partition,
            class_reason=meta.class_reason if meta else None,
            trial=bool(meta and meta.trial),
        )
        if meta and meta.trial and run_s:
            from frontdesk.spec.model import JobSpec

            template = JobSpec.model_validate(job.spec_data()).template()
            rev = self.trials.ended(job.principal, template, run_s, req.walltime_s, now)
            if rev:
                self._revoked(rev)
                section = section.model_copy(update={"trial_revoked": rev.reason})
        return report.with_section(self.name, section)

    # -- views ----------------------------------------------------------------------------------------
    def cluster_info(self) -> dict[str, Json]:
        """Pools, the accelerator catalog, drained nodes and the policy version (for `frontdesk cluster`)."""
        revoked = self._revoked_now(time.time())
        return cluster_view(self.version, self.refused, self.cfg, self._gpu_models(), self.drained, revoked)

    def _gpu_models(self) -> dict[str, int]:
        return gpu_models(self.gateway.backend.inventory().gpus) if self.gateway is not None else {}

    def _revoked_now(self, now: float) -> list[Revoked]:
        return [(p, s.reason, s.revoked_until) for p, s in self.trials.principals.items() if s.revoked_until > now]

    def router(self) -> APIRouter:
        """The `/v1/policy/...` endpoints."""
        from frontdesk.policy.api import build_router

        return build_router(self)

    def panel(self, caller: Caller) -> Panel | None:
        """The web page's pools (drained nodes, GPU models) and trial privilege (views.policy_panel)."""
        now = time.time()
        return policy_panel(self.cfg, self._gpu_models(), self.drained, self._revoked_now(now), caller, now)


if TYPE_CHECKING:  # mypy checks that the plug-in fits each hook of the gateway's seam (frontdesk.plugins)

    def _fits(p: PolicyPlugin) -> tuple[Attaches, Admits, Accepts, Enriches, ShowsCluster, Routes, ShowsPanel, Stops]:
        return p, p, p, p, p, p, p, p
