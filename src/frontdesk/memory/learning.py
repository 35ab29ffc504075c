"""The rules that learn from job outcomes: a failure creates or confirms a lesson, a success learns the fix
(or invalidates the lesson), a nearby command line that succeeds is a fix, substrate failures seen by several
users become cluster lessons.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from frontdesk.memory.classify import Signature, load_catalog
from frontdesk.memory.context import JobContext, argument_change, fix_applied, request_changes
from frontdesk.memory.lesson import Lesson
from frontdesk.memory.rows import LessonRows, fix_text

__all__ = ["LessonLearning", "NO_LESSON_KINDS"]

NO_LESSON_KINDS = frozenset({"ok", "unknown", "cancelled", "preempted"})
"""Endings that teach nothing about the job: no lesson is recorded for them."""
_TRANSIENT_KINDS = frozenset({"node_failure"})
"""Endings that a later success neither fixes nor disproves."""
_ARGUMENT_KINDS = ("cuda_oom", "host_oom", "walltime")
"""Endings an adjusted command line (a smaller batch, fewer steps) can fix."""
_USED_KEYS = ("peak_rss_bytes", "gpu_mem_peak_bytes", "gpu_util_percent")
"""What a failed job's evidence keeps of what it used."""
_SIBLING_WINDOW_S = 7 * 86400.0
"""How recent a failure of a slightly different command line must be to take its success as the fix."""


class LessonLearning(LessonRows):
    """Recording ended jobs and the lessons they teach."""

    def record_run(
        self,
        job_id: int,
        principal: str,
        ctx: JobContext,
        state: str,
        sig: Signature | None,
        used: dict[str, Any],
        ended_at: float | None = None,
    ) -> None:
        """Remember one ended job (the history that fixes and advice are learned from)."""
        self.conn.execute(
            "INSERT OR REPLACE INTO memory_runs(job_id, principal, template, application, state, signature,"
            " kind, requested, used, ended_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
            (
                job_id,
                principal,
                ctx.template,
                ctx.application,
                state,
                sig.key if sig else None,
                sig.kind if sig else None,
                json.dumps(ctx.requested),
                json.dumps(used),
                ended_at or self.clock(),
            ),
        )

    def record_failure(
        self,
        job_id: int,
        principal: str,
        ctx: JobContext,
        sig: Signature,
        source: str = "scheduler",
        used: dict[str, Any] | None = None,
    ) -> list[Lesson]:
        """A failed job: create or confirm its lesson in the principal's own scope; apply site rules."""
        if sig.kind in NO_LESSON_KINDS:
            return []
        now = self.clock()
        evidence: dict[str, Any] = {"job": job_id, "at": now, "requested": ctx.requested}
        kept = {k: v for k, v in (used or {}).items() if k in _USED_KEYS and v is not None}
        if kept:
            evidence["used"] = kept
        touched: list[int] = []
        for lesson in self._select(
            "signature=? AND template=?", [sig.key, ctx.template], principal, by_scope_index=False
        ):
            updates: dict[str, Any] = {
                "times_seen": lesson.times_seen + 1,
                "confirmed_at": now,
                "status": "active",
                "status_reason": None,
                "evidence": json.dumps((lesson.evidence + [evidence])[-20:]),
                "conditions": json.dumps(self._conditions(ctx)),
            }
            if lesson.fix and fix_applied(lesson.fix.get("changes", {}), ctx.requested, ctx.template):
                updates.update(fix=None, fix_text="", status_reason=f"the fix did not hold for job {job_id}")
            self._update(lesson.id, **updates)
            touched.append(lesson.id)
        if not any(self._lesson_row(i)["scope"] == "user" for i in touched):
            touched.append(
                self._insert(
                    scope="user",
                    scope_name=principal,
                    sig=sig,
                    ctx=ctx,
                    source=source,
                    by=principal,
                    evidence=[evidence],
                    now=now,
                )
            )
        site = self._site_rule(sig, ctx, now)
        return [Lesson.from_row(self._lesson_row(i)) for i in touched] + site

    def learn_from_success(self, job_id: int, principal: str, ctx: JobContext) -> list[Lesson]:
        """A completed job: learn the fix for lessons on its template, confirm it, or invalidate them."""
        now = self.clock()
        out = []
        for lesson in self._select(
            "template=? AND template != '' AND status != 'invalid'", [ctx.template], principal, by_scope_index=False
        ):
            if lesson.kind in _TRANSIENT_KINDS:
                continue
            if lesson.fix is None:
                failed = lesson.evidence[-1] if lesson.evidence else {"requested": lesson.requested}
                changes = request_changes(failed.get("requested") or {}, ctx.requested)
                if changes:
                    fix = {
                        "changes": changes,
                        "evidence": [failed.get("job"), job_id],
                        "at": now,
                        "learned_from": "scheduler",
                    }
                    self._update(
                        lesson.id,
                        fix=json.dumps(fix),
                        fix_text=fix_text(changes),
                        times_held=1,
                        confirmed_at=now,
                        status="active",
                        status_reason=None,
                    )
                else:
                    self._update(
                        lesson.id,
                        status="invalid",
                        status_reason=f"job {job_id} completed with the request that failed",
                    )
            elif fix_applied(lesson.fix.get("changes", {}), ctx.requested, ctx.template):
                self._update(
                    lesson.id, times_held=lesson.times_held + 1, confirmed_at=now, status="active", status_reason=None
                )
            else:
                self._update(lesson.id, status="invalid", status_reason=f"job {job_id} completed without the fix")
            out.append(Lesson.from_row(self._lesson_row(lesson.id)))
        return out + self._learn_from_siblings(job_id, principal, ctx, now)

    def _learn_from_siblings(self, job_id: int, principal: str, ctx: JobContext, now: float) -> list[Lesson]:
        """A completed command line a few words away from a recent failure's: those words are the fix."""
        if not ctx.application:
            return []
        marks = ",".join("?" * len(_ARGUMENT_KINDS))
        candidates = self._select(
            f"scope='user' AND scope_name=? AND application=? AND template != ? AND template != ''"
            f" AND status='active' AND kind IN ({marks}) AND (json_extract(fix, '$.changes.arguments[1]')=?"
            f" OR (fix IS NULL AND confirmed_at > ?))",
            [principal, ctx.application, ctx.template, *_ARGUMENT_KINDS, ctx.template, now - _SIBLING_WINDOW_S],
            principal,
        )
        out = []
        for lesson in candidates:
            if lesson.fix is not None:  # this command line is that lesson's fix: it held once more
                self._update(lesson.id, times_held=lesson.times_held + 1, confirmed_at=now)
                out.append(Lesson.from_row(self._lesson_row(lesson.id)))
                continue
            diff = argument_change(lesson.template, ctx.template)
            if diff is None:
                continue
            failed = lesson.evidence[-1] if lesson.evidence else {"requested": lesson.requested}
            changes = request_changes(failed.get("requested") or {}, ctx.requested)
            changes["arguments"] = [lesson.template, ctx.template]
            fix = {
                "changes": changes,
                "arguments": list(diff),
                "evidence": [failed.get("job"), job_id],
                "at": now,
                "learned_from": "scheduler",
            }
            self._update(lesson.id, fix=json.dumps(fix), fix_text=fix_text(changes), times_held=1, confirmed_at=now)
            out.append(Lesson.from_row(self._lesson_row(lesson.id)))
        return out

    def _site_rule(self, sig: Signature, ctx: JobContext, now: float) -> list[Lesson]:
        """Substrate failures of one application seen by `site_threshold` or more users become cluster lessons.

        The lesson holds only what those users share (the signature: kind, detail and the catalog's cause; the
        application), never the words of the one whose job came last: its log line, modules, partition, project."""
        info = load_catalog().kinds.get(sig.kind)
        if info is None or not info.substrate or self.site_threshold <= 0:
            return []
        users = self.conn.execute(
            "SELECT COUNT(*) FROM (SELECT DISTINCT principal FROM memory_runs WHERE signature=? AND application=?"
            " LIMIT ?)",
            (sig.key, ctx.application, self.site_threshold),
        ).fetchone()[0]
        if users < self.site_threshold:
            return []
        row = self.conn.execute(
            "SELECT id FROM memory_lessons WHERE scope='cluster' AND signature=? AND template='' AND application=?",
            (sig.key, ctx.application),
        ).fetchone()
        if row is not None:
            self.conn.execute(
                "UPDATE memory_lessons SET times_seen=times_seen+1, confirmed_at=?,"
                " updated_at=?, status='active', status_reason=NULL WHERE id=?",
                (now, now, int(row["id"])),
            )
            return []
        general = JobContext(template="", application=ctx.application)
        lesson_id = self._insert(
            scope="cluster",
            scope_name="*",
            sig=replace(sig, line="", normalised_line="", extra={}),
            ctx=general,
            source="site",
            by=f"site rule: seen by {users} users",
            evidence=[],
            now=now,
            times_seen=users,
        )
        return [Lesson.from_row(self._lesson_row(lesson_id))]
