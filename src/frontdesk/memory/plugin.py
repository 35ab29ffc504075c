"""The memory plug-in: tells a submission what earlier jobs taught, and learns from every job that ends.

- `admit`: lessons on the same command template (or substrate lessons on its application) that the
  submitter may read become notices, with the known fix; plus resource advice from its finished runs.
- `enrich`: classifies the ended job, records or confirms its lesson, learns a fix when a job on a
  failed template completes after a change, and returns what goes into `report["extra"]["memory"]`:
  the signature, the lessons this ending touched, and the other lessons that match the job.
- `router`: `/v1/memory/...` for the CLI (search, show, promote, forget, advice, classify).

Settings (`[memory]` in frontdesk.toml): `stale_after` (default "90d"), `site_threshold` (3; 0 turns the
site rule off), `admins`, `unix_groups` (true), `[memory.labs]`, `[memory.projects]`.
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
from frontdesk.tails import read_tail

if TYPE_CHECKING:
    from frontdesk.identity import Caller

__all__ = ["MemoryPlugin"]

log = logging.getLogger("frontdesk.memory")

_NO_RUN_STATES = {JobState.DEPENDENCY_NEVER_SATISFIED}


def _summary(lesson: Lesson) -> dict[str, Any]:
    return {
        "id": lesson.id,
        "scope": lesson.scope,
        "signature": lesson.signature,
        "status": lesson.status,
        "fact": lesson.is_fact,
        "fix": lesson.fix,
        "times_seen": lesson.times_seen,
        "times_held": lesson.times_held,
        "text": describe(lesson),
        "next_step": lesson.next_step,
    }


class MemoryPlugin:
    """Failure memory for the gateway (see the module docstring)."""

    name = "memory"

    def __init__(self, settings: Any) -> None:
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

    # -- the seam -----------------------------------------------------------------------------------
    def attach(self, gateway: GatewayHandle) -> None:
        """Keep the gateway and open the lesson store over its database connection."""
        from frontdesk.store.db import apply_schema

        self.gateway = gateway
        # The gateway may open its database before importing plug-ins: make sure our tables exist.
        apply_schema(gateway.store.conn, "memory", MIGRATIONS)
        self.store = LessonStore(gateway.store.conn, self.membership, self.stale_after_s, self.site_threshold)

    def admit(self, spec: Any, ctx: SubmitContext) -> Admission | None:
        """Notices for the lessons and advice that apply to this submission. Never blocks a submission."""
        if self.store is None:
            return None
        try:
            spec_json = spec.model_dump(mode="json", exclude_none=True)
            job_ctx = self._context(spec_json, None, ctx.env, ctx.cwd)
            notices = self.notices(ctx.principal, job_ctx)
            return Admission(notices=self._once(notices, ctx.session or ctx.principal, job_ctx.template))
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

    def enrich(self, job: dict[str, Any], report: dict[str, Any]) -> dict[str, Any]:
        """Classify the ended job, record what it teaches, and return `extra.memory` for its report."""
        if self.store is None or report.get("state") in _NO_RUN_STATES:
            return {}
        job_id = int(job["id"])
        row = self.gateway.store.get(job_id) if self.gateway is not None else None
        context = row.context_data() if row is not None else {}
        text = ""
        if row is not None:
            text = read_tail(row.stdout_path) + "\n" + read_tail(row.stderr_path)
        if not text.strip():
            text = "\n".join(report.get("stdout_tail", []) + report.get("stderr_tail", []))
        sig = classify(text, report.get("state"), report.get("exit_code"))
        sig = replace(sig, line=self.redact(sig.line), normalised_line=self.redact(sig.normalised_line))
        job_ctx = self._context(job.get("spec") or {}, job.get("partition"), context.get("env"), context.get("cwd"))
        used = {**(report.get("used") or {}), "run_s": report.get("run_s")}
        principal = str(job.get("principal") or "")
        self.store.record_run(
            job_id,
            principal,
            job_ctx,
            str(report.get("state")),
            None if sig.kind == "ok" else sig,
            used,
            job.get("ended_at"),
        )
        if sig.kind == "ok":
            touched = self.store.learn_from_success(job_id, principal, job_ctx)
        else:
            touched = self.store.record_failure(job_id, principal, job_ctx, sig, used=used)
        self._publish(job, touched)
        seen = {lesson.id for lesson in touched}
        matched = [lesson for lesson in self.store.matching(principal, job_ctx) if lesson.id not in seen]
        extra: dict[str, Any] = {
            "signature": None if sig.kind == "ok" else _sig_dict(sig),
            "lessons": [_summary(lesson) for lesson in touched],
            "matched": [_summary(lesson) for lesson in matched],
        }
        if sig.kind == "host_oom":
            extra["suggest"] = self._oom_advice(report, principal, job_ctx, touched + matched)
        where = self._partition_advice(sig.kind, job.get("partition"), report, extra.get("suggest"))
        if where:
            extra["partition"] = where
        return extra

    def _partition_advice(self, kind: str, partition: object, report: dict[str, Any], suggest: Any) -> str | None:
        """Where the advice fits when the job's own partition cannot hold it; added to the report's next step."""
        from frontdesk.memory.fit import Need, advise, shapes
        from frontdesk.reports.build import suggest_walltime

        if kind == "host_oom" and isinstance(suggest, dict):
            need = Need(memory_bytes=int(suggest["memory_bytes"]))
        elif kind == "walltime":
            wall = (report.get("requested") or {}).get("walltime_s")
            need = Need(walltime_s=suggest_walltime(report.get("run_s"), wall))
        elif kind == "no_gpu":
            need = Need(gpus=True)
        else:
            return None
        if self.gateway is None:
            return None
        text = advise(
            partition if isinstance(partition, str) else None, need, shapes(self.gateway.backend.inventory().pools)
        )
        cls = report.get("classification")
        if text and isinstance(cls, dict):
            cls["next_step"] = f"{cls.get('next_step') or ''}; {text}".lstrip("; ")
        return text

    def _oom_advice(self, report: dict[str, Any], principal: str, ctx: JobContext, lessons: list[Lesson]) -> Any:
        """The --mem to ask for next, from the best evidence memory has; it replaces the report's next step."""
        from frontdesk.memory.oom import memory_suggestion
        from frontdesk.spec.units import format_bytes

        assert self.store is not None
        requested = (report.get("requested") or {}).get("memory_bytes")
        peak = (report.get("used") or {}).get("peak_rss_bytes")
        runs = self.store.runs(principal, ctx.template, limit=50)
        want, basis = memory_suggestion(peak, requested, runs, lessons)
        step = f"resubmit with --mem {format_bytes(want)} ({basis}), or reduce the working set"
        if isinstance(report.get("classification"), dict):
            report["classification"]["next_step"] = step
        return {"memory_bytes": want, "basis": basis, "next_step": step}

    def _context(
        self, spec: dict[str, Any], partition: str | None, env: dict[str, str] | None, cwd: str | None
    ) -> JobContext:
        """The job context, secrets in its template redacted (stable fingerprints: it still matches)."""
        job_ctx = context_of(spec, partition=partition, env=env, workdir=cwd)
        return replace(job_ctx, template=self.redact(job_ctx.template))

    def _publish(self, job: dict[str, Any], lessons: list[Lesson]) -> None:
        if self.gateway is None:
            return
        from frontdesk.events.models import Event, EventKind

        for lesson in lessons:
            try:
                self.gateway.publish(
                    Event(
                        EventKind.LESSON_RECORDED,
                        job_id=int(job["id"]),
                        session=job.get("session"),
                        principal=job.get("principal"),
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

    def router(self) -> Any:
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


def _sig_dict(sig: Signature) -> dict[str, Any]:
    d = sig.to_dict()
    d.pop("line", None)  # the raw line may hold private paths; the normalised one does not
    return d
