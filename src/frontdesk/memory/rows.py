"""The SQL under `LessonStore`: selects always filtered by the principal's scopes, inserts, updates, ageing.

Shared by the learning rules (`learning.py`) and the store's public reads and writes (`store.py`).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterable
from typing import Any

from frontdesk.memory.classify import Signature
from frontdesk.memory.context import JobContext, scrub_private
from frontdesk.memory.lesson import Lesson
from frontdesk.memory.scopes import Membership, Scope

__all__ = ["LessonRows", "fix_text"]


class LessonRows:
    """The lessons and runs tables over one connection (use it from the event-loop thread only)."""

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
        pending: bool = False,
    ) -> list[Lesson]:
        """Lessons in the principal's scopes; a lab or project proposal (`pending_by`) only with `pending` (for
        review: never an admission notice, a report's match or a lesson that learns)."""
        self._age()
        scope_sql, scope_args = self._scope_sql(self.membership.scopes(principal), by_scope_index)
        live = "" if pending else " AND pending_by IS NULL"
        rows = self.conn.execute(
            f"SELECT * FROM memory_lessons WHERE {scope_sql} AND ({where}){live} ORDER BY {order} LIMIT ?",
            (*scope_args, *args, limit),
        ).fetchall()
        return [Lesson.from_row(r) for r in rows]

    def _conditions(self, ctx: JobContext) -> dict[str, Any]:
        project = self.membership.project_for(ctx.workdir)
        return {**ctx.conditions, **({"project": project} if project else {})}

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


def fix_text(changes: dict[str, list[Any]]) -> str:
    """A fix's changes as one searchable line: `key old -> new; ...`."""
    return "; ".join(f"{k} {old} -> {new}" for k, (old, new) in changes.items())
