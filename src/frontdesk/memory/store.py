"""Lessons and runs in the gateway's SQLite database, with FTS5 search and access checks on every read.

One `LessonStore` over the gateway's connection (use it from the event-loop thread only). Time comes in
through `clock` so tests drive staleness with a fake clock.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from frontdesk.errors import Conflict, Forbidden, NotFound, UserError
from frontdesk.guard.secrets import redact
from frontdesk.memory.classify import Signature, load_catalog
from frontdesk.memory.context import JobContext, fix_applied, scrub_private
from frontdesk.memory.learning import NO_LESSON_KINDS, LessonLearning
from frontdesk.memory.lesson import Lesson, one_line
from frontdesk.memory.rows import fix_text
from frontdesk.memory.schema import MIGRATIONS
from frontdesk.memory.scopes import SCOPES
from frontdesk.memory.share import scrubbed

__all__ = ["LessonStore", "MAX_TYPED_LESSONS", "MIGRATIONS", "NO_LESSON_KINDS"]

MAX_TYPED_LESSONS = 1000
"""Lessons one user may type in (POST /v1/memory/lessons); more answer Conflict until some are forgotten."""


def _fts_query(text: str) -> str:
    words = re.findall(r"[\w.\-/]+", text)
    return " ".join('"' + w.replace('"', '""') + '"' for w in words[:20])


class LessonStore(LessonLearning):
    """Lessons, the runs they are learned from, and the rules that keep them true.

    The SQL is `rows.LessonRows`'s, the learning rules `learning.LessonLearning`'s; here: reading through
    scopes, lessons typed in, promotion and forgetting, the runs history.
    """

    # -- reading, always through scopes -------------------------------------------------------------
    def get(self, lesson_id: int, principal: str) -> Lesson:
        """One lesson the principal may read (NotFound otherwise: no hint that it exists)."""
        found = self._select("id=?", [lesson_id], principal, limit=1, pending=True)  # a proposal, for review
        if not found:
            raise NotFound(f"no lesson {lesson_id}")
        return found[0]

    def search(
        self,
        text: str,
        principal: str,
        limit: int = 20,
        include_invalid: bool = False,
        *,
        state: str | None = None,
        kind: str | None = None,
        template: str | None = None,
    ) -> list[Lesson]:
        """Lessons the principal may read, by words (full text, best first), end state, kind and command; with
        `include_invalid`, invalid ones and their labs' proposals too (for review)."""
        where, args = ["1=1" if include_invalid else "status != 'invalid'"], []
        for column, value in (("state", state and state.upper()), ("kind", kind), ("template", template)):
            if value:
                where.append(f"{column}=?")
                args.append(value)
        query = _fts_query(text)
        if query:
            where.append("id IN (SELECT rowid FROM memory_fts WHERE memory_fts MATCH ?)")
            args.append(query)
        order = "times_seen DESC, updated_at DESC" if query else "updated_at DESC"
        return self._select(" AND ".join(where), args, principal, order=order, limit=limit, pending=include_invalid)

    def matching(self, principal: str, ctx: JobContext) -> list[Lesson]:
        """Lessons about a job about to run: same template, or substrate lessons for its application.

        Invalid lessons are left out; a lesson recorded under other conditions (another version of a
        module it names) is marked stale, to be revalidated by this job's outcome.
        """
        where = (
            "status != 'invalid' AND id IN (SELECT id FROM memory_lessons WHERE template=? UNION ALL "
            "SELECT id FROM memory_lessons WHERE application=? AND application!='' AND template='')"
        )
        found = self._select(
            where,
            [ctx.template, ctx.application],
            principal,
            order="times_seen DESC, id",
            limit=20,
            by_scope_index=False,
        )
        out = []
        for lesson in found:
            changed = _conditions_changed(lesson.conditions, ctx)
            if (
                changed
                and lesson.status == "active"
                and not (lesson.fix and fix_applied(lesson.fix.get("changes", {}), ctx.requested, ctx.template))
            ):
                reason = f"conditions changed: {changed}"
                self._update(lesson.id, status="stale", status_reason=reason)
                lesson = replace(lesson, status="stale", status_reason=reason)
            out.append(lesson)
        return out

    def add(
        self,
        principal: str,
        kind: str,
        cause: str,
        *,
        template: str = "",
        application: str = "",
        fix_text: str = "",
        source: str = "person",
        state: str | None = None,
    ) -> Lesson:
        """A lesson typed in by a person or an agent (in the principal's own scope)."""
        if kind not in load_catalog().kinds:
            raise UserError(f"unknown kind {kind!r} (one of {', '.join(sorted(load_catalog().kinds))})")
        if source not in ("person", "agent"):
            raise UserError("a typed-in lesson comes from a 'person' or an 'agent'")
        if not (template or application):
            raise UserError("a lesson needs the command template or the application it is about")
        for name, value in (("cause", cause), ("template", template), ("application", application), ("fix", fix_text)):
            if not one_line(value):
                raise UserError(f"the lesson's {name} holds control, line-break or bidi characters: one line of text")
        cause, template, fix_text = redact(cause), redact(template), redact(fix_text)
        application, state = redact(application), None if state is None else redact(state)
        detail = " ".join(cause.split())[:120]
        sig = Signature(state, kind, detail, cause[:300])
        ctx = JobContext(template=scrub_private(" ".join(template.split()))[:500], application=application)
        same = self.conn.execute(
            "SELECT id FROM memory_lessons WHERE scope='user' AND scope_name=? AND signature=? AND template=?",
            (principal, sig.key, ctx.template),
        ).fetchone()
        if same is not None and not fix_text:  # issue 18: the same write again (a replayed turn): the stored one
            return Lesson.from_row(self._lesson_row(int(same[0])))
        lesson_id = int(same[0]) if same is not None else 0
        if not lesson_id:
            self._room_for_one_more(principal)
            lesson_id = self._insert(
                scope="user",
                scope_name=principal,
                sig=sig,
                ctx=ctx,
                source=source,
                by=principal,
                evidence=[],
                now=self.clock(),
            )
        if fix_text:
            fix = {"changes": {}, "text": fix_text[:500], "evidence": [], "at": self.clock(), "learned_from": source}
            self._update(lesson_id, fix=json.dumps(fix), fix_text=fix_text[:500])
        return Lesson.from_row(self._lesson_row(lesson_id))

    def _room_for_one_more(self, principal: str) -> None:
        """Typed-in lessons are bounded per user (each is a row every lookup of theirs may read)."""
        n = self.conn.execute(
            "SELECT COUNT(*) FROM (SELECT 1 FROM memory_lessons WHERE scope='user' AND scope_name=?"
            " AND source IN ('person', 'agent') LIMIT ?)",
            (principal, MAX_TYPED_LESSONS),
        ).fetchone()[0]
        if n >= MAX_TYPED_LESSONS:
            raise Conflict(
                f"{principal} already has {MAX_TYPED_LESSONS} typed-in lessons: forget some first"
                " (frontdesk memory forget ID)"
            )

    # -- scopes: promotion and forgetting ------------------------------------------------------------
    def promote(
        self,
        lesson_id: int,
        principal: str,
        scope: str,
        name: str | None = None,
        source: str | None = None,
        *,
        admin: bool = False,
    ) -> Lesson:
        """Copy a lesson into a wider scope, stripped of private paths; refused if secrets remain.

        Into a lab, or a project several users share, one member's promotion is a proposal (`pending_by`) that a
        second, distinct member approves by promoting the proposal itself; an admin's (or approval) holds at once."""
        admin = admin or principal in self.membership.admins or principal == "root"
        lesson = self._for_promotion(lesson_id, principal, admin)
        if lesson.pending_by is not None and scope == lesson.scope:
            return self._approve(lesson, principal, admin)
        if scope not in SCOPES or SCOPES.index(scope) <= SCOPES.index(lesson.scope):
            raise UserError(
                f"cannot promote a {lesson.scope} lesson to {scope!r}: choose a wider scope "
                f"({', '.join(SCOPES[SCOPES.index(lesson.scope) + 1 :])})"
            )
        name = "*" if scope == "cluster" else name or self._default_name(principal, scope, lesson)
        if not (admin or self.membership.may_write(principal, scope, name)):
            raise Forbidden(f"{principal} may not add lessons to the {scope} scope {name!r}")
        fields = scrubbed(lesson, lesson.scope_name if lesson.scope == "user" else principal)
        now = self.clock()
        row = self.conn.execute(
            "SELECT id, pending_by FROM memory_lessons WHERE scope=? AND scope_name=? AND signature=?"
            " AND template=? AND application=?",
            (scope, name, lesson.signature, fields["template"], lesson.application),
        ).fetchone()
        if row is not None and row["pending_by"] is not None:
            if row["pending_by"] == principal and not admin:  # the same member again is still one
                return Lesson.from_row(self._lesson_row(int(row["id"])))
            raise Conflict(
                f"lesson {row['id']}, proposed by {row['pending_by']} for the {scope} {name!r}, holds this"
                f" lesson's place: read it (frontdesk memory show {row['id']}) and promote it to approve it"
            )
        if row is not None:
            self._update(int(row["id"]), promoted_by=principal, confirmed_at=now)
            return Lesson.from_row(self._lesson_row(int(row["id"])))
        pending = not admin and (scope == "lab" or len(self.membership.projects.get(name, ())) > 1)
        return self._copy(
            lesson, fields, (scope, name), principal, source, now, (principal, None) if pending else (None, principal)
        )

    def _for_promotion(self, lesson_id: int, principal: str, admin: bool) -> Lesson:
        """The lesson to promote: one the principal may read (a proposal of their lab too); an admin's, any."""
        if not admin:
            return self.get(lesson_id, principal)
        row = self.conn.execute("SELECT * FROM memory_lessons WHERE id=?", (lesson_id,)).fetchone()
        if row is None:
            raise NotFound(f"no lesson {lesson_id}")
        return Lesson.from_row(row)

    def _approve(self, lesson: Lesson, principal: str, admin: bool) -> Lesson:
        """A proposal promoted again: in force once a second member of its lab or project (or an admin) does it."""
        if not admin:
            if lesson.pending_by == principal:
                return lesson  # one member twice is still one
            if not self.membership.may_write(principal, lesson.scope, lesson.scope_name):
                raise Forbidden(f"{principal} may not add lessons to the {lesson.scope} scope {lesson.scope_name!r}")
        self._update(lesson.id, pending_by=None, approved_by=principal, confirmed_at=self.clock())
        return Lesson.from_row(self._lesson_row(lesson.id))

    def _copy(
        self,
        lesson: Lesson,
        fields: dict[str, Any],
        where: tuple[str, str],
        principal: str,
        source: str | None,
        now: float,
        pending_approved: tuple[str | None, str | None],
    ) -> Lesson:
        """Insert a promoted copy of `lesson` (its shareable `fields`) into scope `where`."""
        cur = self.conn.execute(
            "INSERT INTO memory_lessons(scope, scope_name, signature, kind, state, cause, detail, line,"
            " template, application, modules, partition, requested, conditions, fix, fix_text, source,"
            " created_at, created_by, confirmed_at, times_seen, times_held, status, status_reason, evidence,"
            " origin_id, promoted_by, updated_at, pending_by, approved_by) VALUES (" + ",".join("?" * 30) + ")",
            (
                *where,
                lesson.signature,
                lesson.kind,
                lesson.state,
                fields["cause"],
                lesson.detail,
                fields["line"],
                fields["template"],
                lesson.application,
                json.dumps(lesson.modules),
                lesson.partition,
                json.dumps(lesson.requested),
                json.dumps(lesson.conditions),
                json.dumps(fields["fix"]) if fields["fix"] else None,
                fix_text(fields["fix"]["changes"]) if fields["fix"] else "",
                source or lesson.source,
                lesson.created_at,
                lesson.created_by,
                now,
                lesson.times_seen,
                lesson.times_held,
                lesson.status,
                lesson.status_reason,
                json.dumps(fields["evidence"]),
                lesson.id,
                principal,
                now,
                *pending_approved,
            ),
        )
        return Lesson.from_row(self._lesson_row(int(cur.lastrowid or 0)))

    def forget(self, lesson_id: int, principal: str, admin: bool = False) -> Lesson:
        """Delete a lesson: admins (and the gateway's owner) any, users their own (recorded or promoted by them)."""
        if admin or principal in self.membership.admins or principal == "root":
            row = self.conn.execute("SELECT * FROM memory_lessons WHERE id=?", (lesson_id,)).fetchone()
            if row is None:
                raise NotFound(f"no lesson {lesson_id}")
            lesson = Lesson.from_row(row)
        else:
            lesson = self.get(lesson_id, principal)
            own = (lesson.scope, lesson.scope_name) == ("user", principal) or principal in (
                lesson.promoted_by,
                lesson.created_by if lesson.source in ("person", "agent") else None,
            )
            if not own:
                raise Forbidden(f"lesson {lesson_id} is not yours to forget: ask its owner or an admin")
        self.conn.execute("DELETE FROM memory_lessons WHERE id=?", (lesson_id,))
        return lesson

    def _default_name(self, principal: str, scope: str, lesson: Lesson) -> str:
        """The lab or project to promote to when none is named: the job's own project, or the only one."""
        if scope == "project" and lesson.conditions.get("project") in self.membership.projects_of(principal):
            return str(lesson.conditions["project"])
        options = self.membership.labs_of(principal) if scope == "lab" else self.membership.projects_of(principal)
        if len(options) == 1:
            return options[0]
        raise UserError(f"name the {scope} to promote to (you belong to: {', '.join(options) or 'none'})")

    def runs(self, principal: str, template: str | None = None, limit: int = 200) -> list[dict[str, Any]]:
        """A principal's own ended jobs (newest first), for resource advice."""
        sql = "SELECT * FROM memory_runs WHERE principal=?" + (" AND template=?" if template else "")
        args: list[Any] = [principal] + ([template] if template else [])
        rows = self.conn.execute(sql + " ORDER BY ended_at DESC LIMIT ?", (*args, limit)).fetchall()
        return [{**dict(r), "requested": json.loads(r["requested"]), "used": json.loads(r["used"])} for r in rows]


def _conditions_changed(recorded: dict[str, Any], ctx: JobContext) -> str:
    """Which recorded conditions differ for this job ('' when none): versions of the same modules."""
    now = ctx.conditions.get("versions", {})
    diffs = [
        f"{name} {old} -> {now[name]}"
        for name, old in recorded.get("versions", {}).items()
        if name in now and now[name] != old
    ]
    return ", ".join(diffs)
