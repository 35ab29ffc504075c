"""Lessons and runs in the gateway's SQLite database, with FTS5 search and access checks on every read.

One `LessonStore` over the gateway's connection (use it from the event-loop thread only). Time comes in
through `clock` so tests drive staleness with a fake clock.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from frontdesk.errors import Forbidden, NotFound, UserError
from frontdesk.guard.secrets import redact
from frontdesk.memory.classify import Signature, load_catalog
from frontdesk.memory.context import (
    JobContext,
    argument_change,
    fix_applied,
    request_changes,
    scrub_private,
)
from frontdesk.memory.lesson import Lesson
from frontdesk.memory.scopes import SCOPES, Membership, Scope
from frontdesk.memory.share import scrubbed
from frontdesk.store.db import register_schema

__all__ = ["LessonStore", "MIGRATIONS", "NO_LESSON_KINDS"]

MIGRATIONS = [
    """
    CREATE TABLE memory_lessons (
        id            INTEGER PRIMARY KEY AUTOINCREMENT,
        scope         TEXT NOT NULL,              -- user | project | lab | cluster
        scope_name    TEXT NOT NULL,              -- the user, project or lab; '*' for the cluster
        signature     TEXT NOT NULL,              -- Signature.key: STATE:kind:detail
        kind          TEXT NOT NULL,
        state         TEXT,
        cause         TEXT NOT NULL,
        detail        TEXT NOT NULL DEFAULT '',
        line          TEXT NOT NULL DEFAULT '',   -- the normalised log line that decided it
        template      TEXT NOT NULL DEFAULT '',   -- '' for substrate lessons matched by application
        application   TEXT NOT NULL DEFAULT '',
        modules       TEXT NOT NULL DEFAULT '[]',
        partition     TEXT,
        requested     TEXT NOT NULL DEFAULT '{}',
        conditions    TEXT NOT NULL DEFAULT '{}',
        fix           TEXT,                       -- {"changes", "evidence": [failed, completed], "at"}
        fix_text      TEXT NOT NULL DEFAULT '',
        source        TEXT NOT NULL,              -- scheduler | site | agent | person
        created_at    REAL NOT NULL,
        created_by    TEXT NOT NULL,
        confirmed_at  REAL NOT NULL,
        times_seen    INTEGER NOT NULL DEFAULT 1,
        times_held    INTEGER NOT NULL DEFAULT 0,
        status        TEXT NOT NULL DEFAULT 'active',  -- active | stale | invalid
        status_reason TEXT,
        evidence      TEXT NOT NULL DEFAULT '[]',
        origin_id     INTEGER,
        promoted_by   TEXT,
        updated_at    REAL NOT NULL
    );
    CREATE UNIQUE INDEX memory_lessons_identity ON memory_lessons(scope, scope_name, signature, template);
    CREATE INDEX memory_lessons_template ON memory_lessons(template);
    CREATE INDEX memory_lessons_application ON memory_lessons(application);
    CREATE VIRTUAL TABLE memory_fts USING fts5(
        cause, line, template, application, fix_text, content='memory_lessons', content_rowid='id');
    CREATE TRIGGER memory_lessons_ai AFTER INSERT ON memory_lessons BEGIN
        INSERT INTO memory_fts(rowid, cause, line, template, application, fix_text)
        VALUES (new.id, new.cause, new.line, new.template, new.application, new.fix_text);
    END;
    CREATE TRIGGER memory_lessons_ad AFTER DELETE ON memory_lessons BEGIN
        INSERT INTO memory_fts(memory_fts, rowid, cause, line, template, application, fix_text)
        VALUES ('delete', old.id, old.cause, old.line, old.template, old.application, old.fix_text);
    END;
    CREATE TRIGGER memory_lessons_au AFTER UPDATE ON memory_lessons BEGIN
        INSERT INTO memory_fts(memory_fts, rowid, cause, line, template, application, fix_text)
        VALUES ('delete', old.id, old.cause, old.line, old.template, old.application, old.fix_text);
        INSERT INTO memory_fts(rowid, cause, line, template, application, fix_text)
        VALUES (new.id, new.cause, new.line, new.template, new.application, new.fix_text);
    END;
    CREATE TABLE memory_runs (
        job_id      INTEGER PRIMARY KEY,
        principal   TEXT NOT NULL,
        template    TEXT NOT NULL,
        application TEXT NOT NULL DEFAULT '',
        state       TEXT NOT NULL,
        signature   TEXT,
        kind        TEXT,
        requested   TEXT NOT NULL,
        used        TEXT NOT NULL,
        ended_at    REAL NOT NULL
    );
    CREATE INDEX memory_runs_template ON memory_runs(template, principal);
    CREATE INDEX memory_runs_signature ON memory_runs(signature);
    """,
    # 2: template-less (substrate) lessons are told apart by application
    """
    DROP INDEX memory_lessons_identity;
    CREATE UNIQUE INDEX memory_lessons_identity2
        ON memory_lessons(scope, scope_name, signature, template, application);
    """,
    # 3: indexes for ageing, substrate matching and the site rule's distinct-users count
    """
    CREATE INDEX memory_lessons_status ON memory_lessons(status, confirmed_at);
    DROP INDEX memory_lessons_template;
    DROP INDEX memory_lessons_application;
    CREATE INDEX memory_lessons_template_app ON memory_lessons(template, application);
    DROP INDEX memory_runs_signature;
    CREATE INDEX memory_runs_signature_principal ON memory_runs(signature, principal);
    """,
]
register_schema("memory", MIGRATIONS)

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


def _fts_query(text: str) -> str:
    words = re.findall(r"[\w.\-/]+", text)
    return " ".join('"' + w.replace('"', '""') + '"' for w in words[:20])


class LessonStore:
    """Lessons, the runs they are learned from, and the rules that keep them true."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        membership: Membership | None = None,
        stale_after_s: float = 90 * 86400,
        site_threshold: int = 3,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.conn = conn
        self.membership = membership or Membership()
        self.stale_after_s = stale_after_s
        self.site_threshold = site_threshold
        self.clock = clock
        self._aged_at = float("-inf")

    # -- reading, always through scopes -------------------------------------------------------------
    def _scope_sql(self, scopes: Iterable[Scope], by_index: bool = True) -> tuple[str, list[str]]:
        # `+scope` keeps SQLite from planning on the scope index when a narrower one (template) applies
        plus = "" if by_index else "+"
        parts, args = [], []
        for scope, name in scopes:
            parts.append(f"({plus}scope=? AND {plus}scope_name=?)")
            args += [scope, name]
        return "(" + " OR ".join(parts) + ")", args

    def _age(self) -> None:
        """Mark active lessons not confirmed within `stale_after_s` as stale (at most once a minute)."""
        if self.clock() - self._aged_at < 60:
            return
        self._aged_at = self.clock()
        cutoff = self.clock() - self.stale_after_s
        self.conn.execute(
            "UPDATE memory_lessons SET status='stale', status_reason=?, updated_at=? "
            "WHERE status='active' AND confirmed_at < ?",
            (f"not confirmed for {int(self.stale_after_s // 86400)} days", self.clock(), cutoff),
        )

    def _select(
        self,
        where: str,
        args: list[Any],
        principal: str,
        order: str = "id",
        limit: int = 100,
        by_scope_index: bool = True,
    ) -> list[Lesson]:
        self._age()
        scope_sql, scope_args = self._scope_sql(self.membership.scopes(principal), by_scope_index)
        rows = self.conn.execute(
            f"SELECT * FROM memory_lessons WHERE {scope_sql} AND ({where}) ORDER BY {order} LIMIT ?",
            (*scope_args, *args, limit),
        ).fetchall()
        return [Lesson.from_row(r) for r in rows]

    def get(self, lesson_id: int, principal: str) -> Lesson:
        """One lesson the principal may read (NotFound otherwise: no hint that it exists)."""
        found = self._select("id=?", [lesson_id], principal, limit=1)
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
        """Lessons the principal may read, by words (full text, best first), end state, kind and command."""
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
        return self._select(" AND ".join(where), args, principal, order=order, limit=limit)

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

    # -- recording ----------------------------------------------------------------------------------
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
                        fix_text=_fix_text(changes),
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
            self._update(lesson.id, fix=json.dumps(fix), fix_text=_fix_text(changes), times_held=1, confirmed_at=now)
            out.append(Lesson.from_row(self._lesson_row(lesson.id)))
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
        cause, template, fix_text = redact(cause), redact(template), redact(fix_text)
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

    # -- scopes: promotion and forgetting ------------------------------------------------------------
    def promote(
        self, lesson_id: int, principal: str, scope: str, name: str | None = None, source: str | None = None
    ) -> Lesson:
        """Copy a lesson into a wider scope, stripped of private paths; refused if secrets remain."""
        lesson = self.get(lesson_id, principal)
        if scope not in SCOPES or SCOPES.index(scope) <= SCOPES.index(lesson.scope):
            raise UserError(
                f"cannot promote a {lesson.scope} lesson to {scope!r}: choose a wider scope "
                f"({', '.join(SCOPES[SCOPES.index(lesson.scope) + 1 :])})"
            )
        name = "*" if scope == "cluster" else name or self._default_name(principal, scope, lesson)
        if not self.membership.may_write(principal, scope, name):
            raise Forbidden(f"{principal} may not add lessons to the {scope} scope {name!r}")
        fields = scrubbed(lesson, principal)
        now = self.clock()
        row = self.conn.execute(
            "SELECT id FROM memory_lessons WHERE scope=? AND scope_name=? AND signature=? AND template=?"
            " AND application=?",
            (scope, name, lesson.signature, fields["template"], lesson.application),
        ).fetchone()
        if row is not None:
            self._update(int(row["id"]), promoted_by=principal, confirmed_at=now)
            return Lesson.from_row(self._lesson_row(int(row["id"])))
        cur = self.conn.execute(
            "INSERT INTO memory_lessons(scope, scope_name, signature, kind, state, cause, detail, line,"
            " template, application, modules, partition, requested, conditions, fix, fix_text, source,"
            " created_at, created_by, confirmed_at, times_seen, times_held, status, status_reason, evidence,"
            " origin_id, promoted_by, updated_at) VALUES (" + ",".join("?" * 28) + ")",
            (
                scope,
                name,
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
                _fix_text(fields["fix"]["changes"]) if fields["fix"] else "",
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

    def _conditions(self, ctx: JobContext) -> dict[str, Any]:
        project = self.membership.project_for(ctx.workdir)
        return {**ctx.conditions, **({"project": project} if project else {})}

    def _default_name(self, principal: str, scope: str, lesson: Lesson) -> str:
        """The lab or project to promote to when none is named: the job's own project, or the only one."""
        if scope == "project" and lesson.conditions.get("project") in self.membership.projects_of(principal):
            return str(lesson.conditions["project"])
        options = self.membership.labs_of(principal) if scope == "lab" else self.membership.projects_of(principal)
        if len(options) == 1:
            return options[0]
        raise UserError(f"name the {scope} to promote to (you belong to: {', '.join(options) or 'none'})")

    def _site_rule(self, sig: Signature, ctx: JobContext, now: float) -> list[Lesson]:
        """Substrate failures seen by `site_threshold` or more users become cluster lessons."""
        info = load_catalog().kinds.get(sig.kind)
        if info is None or not info.substrate or self.site_threshold <= 0:
            return []
        users = self.conn.execute(
            "SELECT COUNT(*) FROM (SELECT DISTINCT principal FROM memory_runs WHERE signature=? LIMIT ?)",
            (sig.key, self.site_threshold),
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
        general = replace(ctx, template="", requested={}, modules=ctx.modules)
        lesson_id = self._insert(
            scope="cluster",
            scope_name="*",
            sig=sig,
            ctx=general,
            source="site",
            by=f"site rule: seen by {users} users",
            evidence=[],
            now=now,
            times_seen=users,
        )
        return [Lesson.from_row(self._lesson_row(lesson_id))]

    # -- rows ---------------------------------------------------------------------------------------
    def _insert(
        self,
        *,
        scope: str,
        scope_name: str,
        sig: Signature,
        ctx: JobContext,
        source: str,
        by: str,
        evidence: list[dict[str, Any]],
        now: float,
        times_seen: int = 1,
    ) -> int:
        line = scrub_private(sig.normalised_line)
        cur = self.conn.execute(
            "INSERT INTO memory_lessons(scope, scope_name, signature, kind, state, cause, detail, line,"
            " template, application, modules, partition, requested, conditions, source, created_at,"
            " created_by, confirmed_at, times_seen, evidence, updated_at)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                scope,
                scope_name,
                sig.key,
                sig.kind,
                sig.state,
                sig.cause,
                sig.detail,
                line,
                ctx.template,
                ctx.application,
                json.dumps(ctx.modules),
                ctx.partition,
                json.dumps(ctx.requested),
                json.dumps(self._conditions(ctx)),
                source,
                now,
                by,
                now,
                times_seen,
                json.dumps(evidence),
                now,
            ),
        )
        return int(cur.lastrowid or 0)

    def _update(self, lesson_id: int, **fields: Any) -> None:
        fields["updated_at"] = self.clock()
        sets = ", ".join(f"{k}=?" for k in fields)
        self.conn.execute(f"UPDATE memory_lessons SET {sets} WHERE id=?", (*fields.values(), lesson_id))

    def _lesson_row(self, lesson_id: int) -> sqlite3.Row:
        row: sqlite3.Row = self.conn.execute("SELECT * FROM memory_lessons WHERE id=?", (lesson_id,)).fetchone()
        return row

    def runs(self, principal: str, template: str | None = None, limit: int = 200) -> list[dict[str, Any]]:
        """A principal's own ended jobs (newest first), for resource advice."""
        sql = "SELECT * FROM memory_runs WHERE principal=?" + (" AND template=?" if template else "")
        args: list[Any] = [principal] + ([template] if template else [])
        rows = self.conn.execute(sql + " ORDER BY ended_at DESC LIMIT ?", (*args, limit)).fetchall()
        return [{**dict(r), "requested": json.loads(r["requested"]), "used": json.loads(r["used"])} for r in rows]


def _fix_text(changes: dict[str, list[Any]]) -> str:
    return "; ".join(f"{k} {old} -> {new}" for k, (old, new) in changes.items())


def _conditions_changed(recorded: dict[str, Any], ctx: JobContext) -> str:
    """Which recorded conditions differ for this job ('' when none): versions of the same modules."""
    now = ctx.conditions.get("versions", {})
    diffs = [
        f"{name} {old} -> {now[name]}"
        for name, old in recorded.get("versions", {}).items()
        if name in now and now[name] != old
    ]
    return ", ".join(diffs)
