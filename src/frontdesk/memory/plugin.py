"""The memory plug-in: tells a submission what earlier jobs taught, and learns from every job that ends.

- `admit`: lessons on the same command template (or substrate lessons on its application) that the
  submitter may read become notices, with the known fix; plus resource advice from its finished runs.
- `enrich`: classifies the ended job, records or confirms its lesson, learns a fix when a job on a
  failed template completes after a change, and adds the report's typed section `extra.memory`
  (`reports.model.MemorySection`): the signature, the lessons this ending touched, the other lessons that
  match the job; after an out-of-memory ending the --mem to ask for (it becomes the report's next step).
- `router`: `/v1/memory/...` for the CLI (search, show, promote, forget, advice, classify).

Settings (`[memory]` in frontdesk.toml): `stale_after` (default "90d"), `site_threshold` (3; 0 turns the
site rule off), `admins`, `unix_groups` (true), `lab_groups` (unset: groups of gid >= 1000), `[memory.labs]`,
`[memory.projects]`.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from frontdesk.errors import ConfigError
from frontdesk.guard.secrets import redact
from frontdesk.jobs import JobState
from frontdesk.memory.advice import advise_template
from frontdesk.memory.classify import Signature, classify
from frontdesk.memory.context import JobContext, context_of
from frontdesk.memory.lesson import Lesson, describe
from frontdesk.memory.scopes import Membership
from frontdesk.memory.store import MIGRATIONS, LessonStore
from frontdesk.plugins import Admission, GatewayHandle, Notice, Panel, SubmitContext
from frontdesk.reports.model import LessonSummary, MemorySection, MemorySuggestion, Report, SignatureInfo
from frontdesk.tails import read_tail

if TYPE_CHECKING:
    from fastapi import APIRouter

    from frontdesk.config import Settings
    from frontdesk.identity import Caller
    from frontdesk.jobs.record import JobRecord
    from frontdesk.plugins import Admits, Attaches, Enriches, Routes, ShowsPanel, Stops
    from frontdesk.spec.model import JobSpec

__all__ = ["MemoryPlugin"]

log = logging.getLogger("frontdesk.memory")

_NO_RUN_STATES = {JobState.DEPENDENCY_NEVER_SATISFIED}
_CONTEXT_CACHED_CHARS = 16_384
"""Jobs whose spec and submit context are longer than this have their context worked out on each end."""


def _summary(lesson: Lesson) -> LessonSummary:
    return LessonSummary(
        id=lesson.id,
        scope=lesson.scope,
        signature=lesson.signature,
        status=lesson.status,
        fact=lesson.is_fact,
        fix=lesson.fix,
        times_seen=lesson.times_seen,
        times_held=lesson.times_held,
        text=describe(lesson),
        next_step=lesson.next_step,
    )


class MemoryPlugin:
    """Failure memory for the gateway (see the module docstring)."""

    name = "memory"

    def __init__(self, settings: Settings) -> None:
        from frontdesk.spec.units import parse_duration

        section = settings.section("memory")
        self.settings = settings
        self.membership = Membership.from_section(section)
        try:
            self.stale_after_s = float(parse_duration(section.get("stale_after", "90d")))
            self.site_threshold = int(section.get("site_threshold", 3))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"[memory]: {exc}") from None
        self.gateway: GatewayHandle | None = None
        self.store: LessonStore | None = None
        self.redact = redact
        self._said: dict[tuple[str, str, str, str], None] = {}
        """Notices already said, by (session, template, lesson or advice, text): said once, then quiet."""
        self._contexts: dict[tuple[str, str | None, str], JobContext] = {}
        """Ended jobs' contexts by (spec, partition, submit context) text (`_ended_context`)."""

    # -- the seam -----------------------------------------------------------------------------------
    def attach(self, gateway: GatewayHandle) -> None:
        """Keep the gateway and open the lesson store over its database connection."""
        from frontdesk.store.db import apply_schema

        self.gateway = gateway
        # The gateway may open its database before importing plug-ins: make sure our tables exist.
        apply_schema(gateway.store.conn, "memory", MIGRATIONS)
        self.store = LessonStore(gateway.store.conn, self.membership, self.stale_after_s, self.site_threshold)

    def admit(self, spec: JobSpec, ctx: SubmitContext) -> Admission | None:
        """Notices for the lessons and advice that apply to this submission. Never blocks a submission."""
        if self.store is None:
            return None
        try:
            spec_json = spec.model_dump(mode="json", exclude_none=True)
            job_ctx = self._context(spec_json, None, ctx.env, ctx.cwd)
            notices = self.notices(ctx.principal, job_ctx)
            said_to = f"{ctx.principal}\x1f{ctx.session or ''}"  # one user's session id never silences another's
            return Admission(notices=self._once(notices, said_to, job_ctx.template))
        except Exception:
            log.exception("memory: admission lookup failed")
            return None

    def _once(self, notices: list[Notice], session: str, template: str) -> list[Notice]:
        """Each notice said once per session and command template; repeats stay in the JSON, marked quiet."""
        out = []
        for notice in notices:
            key = (session, template, str(notice.data.get("lesson_id") or "advice"), notice.text)
            if key in self._said:
                notice = Notice(notice.source, notice.text, {**notice.data, "quiet": True})
            else:
                self._said[key] = None
                if len(self._said) > 10_000:  # bounded: forget the oldest
                    self._said.pop(next(iter(self._said)))
            out.append(notice)
        return out

    def notices(self, principal: str, job_ctx: JobContext) -> list[Notice]:
        """The notices for one principal about to run one job context, each saying what matched it."""
        assert self.store is not None
        out = []
        for lesson in self.store.matching(principal, job_ctx):
            if lesson.template == job_ctx.template:
                matched = f"the same command template `{lesson.template[:120]}`"
            else:
                matched = f"the application `{lesson.application}` (a {lesson.scope} lesson)"
            out.append(
                Notice(
                    source="memory",
                    text=f"memory: {describe(lesson)} [matched: {matched}]",
                    data={
                        "lesson_id": lesson.id,
                        "signature": lesson.signature,
                        "kind": lesson.kind,
                        "status": lesson.status,
                        "fact": lesson.is_fact,
                        "scope": lesson.scope,
                        "fix": lesson.fix,
                        "next_step": lesson.next_step,
                        "matched_by": "template" if lesson.template == job_ctx.template else "application",
                        "matched": matched,
                    },
                )
            )
        advice = advise_template(self.store.runs(principal, job_ctx.template, limit=20))
        if advice:
            out.append(
                Notice(
                    source="memory",
                    text="memory: earlier runs of this command: " + "; ".join(advice["lines"]),
                    data={"advice": advice["suggest"]},
                )
            )
        return out

    def enrich(self, job: JobRecord, report: Report) -> Report:
        """Classify the ended job, record what it teaches, and add `extra.memory` (and a better next step)."""
        if self.store is None or report.state in _NO_RUN_STATES:
            return report
        uid = job.runs_as()
        text = read_tail(job.stdout_path, owner=uid) + "\n" + read_tail(job.stderr_path, owner=uid)
        if not text.strip():
            text = "\n".join([*report.stdout_tail, *report.stderr_tail])
        sig = classify(text, report.state, report.exit_code)
        sig = replace(sig, line=self.redact(sig.line), normalised_line=self.redact(sig.normalised_line))
        job_ctx = self._ended_context(job)
        used: dict[str, Any] = {**report.used.model_dump(), "run_s": report.run_s}
        failed = None if sig.kind == "ok" else sig
        self.store.record_run(job.id, job.principal, job_ctx, str(report.state), failed, used, job.ended_at)
        if failed is None:
            touched = self.store.learn_from_success(job.id, job.principal, job_ctx)
        else:
            touched = self.store.record_failure(job.id, job.principal, job_ctx, failed, used=used)
        self._publish(job, touched)
        seen = {lesson.id for lesson in touched}
        matched = [lesson for lesson in self.store.matching(job.principal, job_ctx) if lesson.id not in seen]
        fields: dict[str, Any] = {
            "signature": None if failed is None else _sig_info(failed),
            "lessons": tuple(_summary(lesson) for lesson in touched),
            "matched": tuple(_summary(lesson) for lesson in matched),
        }
        suggest = None
        if sig.kind == "host_oom":
            suggest = fields["suggest"] = self._oom_advice(report, job.principal, job_ctx, touched + matched)
            report = report.with_next_step(suggest.next_step)
        where = self._partition_advice(sig.kind, job.partition, report, suggest)
        if where:
            fields["partition"] = where
            report = report.with_next_step(f"{report.classification.next_step}; {where}".lstrip("; "))
        return report.with_section(self.name, MemorySection(**fields))

    def _partition_advice(
        self, kind: str, partition: str | None, report: Report, suggest: MemorySuggestion | None
    ) -> str | None:
        """Where the advice fits when the job's own partition cannot hold it (for the report's next step)."""
        if kind not in ("host_oom", "walltime", "no_gpu") or self.gateway is None:
            return None  # most ends: nothing to place (and no imports on a job's end path)
        from frontdesk.memory.fit import Need, advise, shapes
        from frontdesk.reports.build import suggest_walltime

        if kind == "host_oom" and suggest is not None:
            need = Need(memory_bytes=suggest.memory_bytes)
        elif kind == "walltime":
            wall = report.requested.walltime_s
            need = Need(walltime_s=suggest_walltime(report.run_s, None if wall is None else int(wall)))
        elif kind == "no_gpu":
            need = Need(gpus=True)
        else:
            return None
        return advise(partition, need, shapes(self.gateway.backend.inventory().pools))

    def _oom_advice(self, report: Report, principal: str, ctx: JobContext, lessons: list[Lesson]) -> MemorySuggestion:
        """The --mem to ask for next, from the best evidence memory has (it replaces the report's next step)."""
        from frontdesk.memory.oom import memory_suggestion
        from frontdesk.spec.units import format_bytes

        assert self.store is not None
        requested = report.requested.memory_bytes
        peak = report.used.peak_rss_bytes
        runs = self.store.runs(principal, ctx.template, limit=50)
        want, basis = memory_suggestion(None if peak is None else int(peak), requested, runs, lessons, principal)
        step = f"resubmit with --mem {format_bytes(want)} ({basis}), or reduce the working set"
        return MemorySuggestion(memory_bytes=want, basis=basis, next_step=step)

    def _ended_context(self, job: JobRecord) -> JobContext:
        """An ended job's context: pure over its stored spec, partition and submit context, so a rerun of the
        same job (an agent's loop) reuses it instead of normalising its command again on its end's path."""
        key = (job.spec, job.partition, job.context)
        found = self._contexts.get(key)
        if found is None:
            context = job.context_data()
            found = self._context(job.spec_data(), job.partition, context.get("env"), context.get("cwd"))
            if len(job.spec) + len(job.context) <= _CONTEXT_CACHED_CHARS:
                self._contexts[key] = found
                if len(self._contexts) > 256:  # bounded: forget the oldest
                    self._contexts.pop(next(iter(self._contexts)))
        return found

    def _context(
        self, spec: dict[str, Any], partition: str | None, env: dict[str, str] | None, cwd: str | None
    ) -> JobContext:
        """The job context, secrets in its template redacted (stable fingerprints: it still matches)."""
        job_ctx = context_of(spec, partition=partition, env=env, workdir=cwd)
        return replace(job_ctx, template=self.redact(job_ctx.template))

    def _publish(self, job: JobRecord, lessons: list[Lesson]) -> None:
        if self.gateway is None or not lessons:
            return
        from frontdesk.events.models import Event, EventKind

        for lesson in lessons:
            try:
                self.gateway.publish(
                    Event(
                        EventKind.LESSON_RECORDED,
                        job_id=job.id,
                        session=job.session,
                        principal=job.principal,
                        data={
                            "lesson": lesson.id,
                            "signature": lesson.signature,
                            "scope": lesson.scope,
                            "status": lesson.status,
                        },
                    )
                )
            except Exception:
                log.exception("memory: could not publish lesson %s", lesson.id)

    def router(self) -> APIRouter:
        """The `/v1/memory/...` endpoints."""
        from frontdesk.memory.api import build_router

        return build_router(self)

    def stop(self) -> None:
        """Nothing to release: the store lives on the gateway's connection."""

    def panel(self, caller: Caller) -> Panel | None:
        """The web page's lessons: the ten most recent this caller may read (their scopes only)."""
        if self.store is None:
            return None
        rows = []
        for lesson in self.store.search("", caller.user, limit=10):
            fix = lesson.fix.get("text") if isinstance(lesson.fix, dict) else None
            rows.append((str(lesson.id), lesson.scope, lesson.kind, (lesson.cause or lesson.line)[:160],
                         str(fix or "")[:160], lesson.status))  # fmt: skip
        return Panel("Lessons", ("#", "scope", "kind", "cause", "fix", "status"), tuple(rows))


def _sig_info(sig: Signature) -> SignatureInfo:
    d = sig.to_dict()
    d.pop("line", None)  # the raw line may hold private paths; the normalised one does not
    return SignatureInfo.model_validate(d)


if TYPE_CHECKING:  # mypy checks that the plug-in fits each hook of the gateway's seam (frontdesk.plugins)

    def _fits(p: MemoryPlugin) -> tuple[Attaches, Admits, Enriches, Routes, ShowsPanel, Stops]:
        return p, p, p, p, p, p
