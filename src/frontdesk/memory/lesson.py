"""A Lesson: a failure signature in a context, its cause, its fix when one was learned, and provenance."""

from __future__ import annotations

import json
import re
import sqlite3
import time
from dataclasses import dataclass, field
from typing import Any

from frontdesk.spec.units import format_bytes, format_duration

__all__ = ["Lesson", "MAX_QUOTED", "describe", "one_line", "plain", "quoted"]

MAX_QUOTED = 300
"""The most characters of one principal's words another principal's agent reads in a lesson's text."""
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def one_line(text: str) -> bool:
    """Whether text holds no control, line-break or bidi character (what a typed-in lesson may hold)."""
    return _UNSAFE.search(text) is None


def plain(text: str, limit: int = MAX_QUOTED) -> str:
    """Words someone wrote, as data on one line: control, line-break and bidi characters as spaces, bounded."""
    flat = " ".join(_UNSAFE.sub(" ", text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def quoted(text: str, limit: int = MAX_QUOTED) -> str:
    """`plain(text)` in double quotes (inner quotes escaped): a span no reader takes for frontdesk's own words."""
    return json.dumps(plain(text, limit), ensure_ascii=False)


_TIMES = {1: "once", 2: "twice"}
_KIND_KEY = {"host_oom": "memory_bytes", "walltime": "walltime_s", "cuda_oom": "gpus"}


@dataclass(frozen=True)
class Lesson:
    """One stored lesson (the row of `memory_lessons`, decoded)."""

    id: int
    scope: str
    scope_name: str
    signature: str
    kind: str
    state: str | None
    cause: str
    detail: str
    line: str
    template: str
    application: str
    modules: list[str]
    partition: str | None
    requested: dict[str, Any]
    conditions: dict[str, Any]
    fix: dict[str, Any] | None
    source: str
    created_at: float
    created_by: str
    confirmed_at: float
    times_seen: int
    times_held: int
    status: str
    status_reason: str | None
    evidence: list[dict[str, Any]] = field(default_factory=list)
    origin_id: int | None = None
    promoted_by: str | None = None
    pending_by: str | None = None
    """A lab (or shared project) proposal: the one member who promoted it (None: in force)."""
    approved_by: str | None = None
    """Who put a proposal in force: a second member of the lab, or an admin."""

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Lesson:
        """Decode a `memory_lessons` row."""
        return cls(
            id=int(row["id"]),
            scope=row["scope"],
            scope_name=row["scope_name"],
            signature=row["signature"],
            kind=row["kind"],
            state=row["state"],
            cause=row["cause"],
            detail=row["detail"],
            line=row["line"],
            template=row["template"],
            application=row["application"],
            modules=json.loads(row["modules"]),
            partition=row["partition"],
            requested=json.loads(row["requested"]),
            conditions=json.loads(row["conditions"]),
            fix=json.loads(row["fix"]) if row["fix"] else None,
            source=row["source"],
            created_at=row["created_at"],
            created_by=row["created_by"],
            confirmed_at=row["confirmed_at"],
            times_seen=row["times_seen"],
            times_held=row["times_held"],
            status=row["status"],
            status_reason=row["status_reason"],
            evidence=json.loads(row["evidence"]),
            origin_id=row["origin_id"],
            promoted_by=row["promoted_by"],
            pending_by=row["pending_by"],
            approved_by=row["approved_by"],
        )

    @property
    def next_step(self) -> str:
        """The catalog's next step for this lesson's kind, made specific with its detail."""
        from frontdesk.memory.classify import load_catalog

        info = load_catalog().kinds.get(self.kind)
        return info.advice(self.detail) if info else ""

    @property
    def is_fact(self) -> bool:
        """Only active lessons are stated as facts; stale ones are hedged, invalid ones never shown."""
        return self.status == "active" and self.pending_by is None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form (the schema of `frontdesk memory show --json`)."""
        return {
            "id": self.id,
            "scope": self.scope,
            "scope_name": self.scope_name,
            "signature": self.signature,
            "kind": self.kind,
            "state": self.state,
            "cause": self.cause,
            "detail": self.detail,
            "line": self.line,
            "context": {
                "template": self.template,
                "application": self.application,
                "modules": self.modules,
                "partition": self.partition,
                "requested": self.requested,
            },
            "conditions": self.conditions,
            "fix": self.fix,
            "provenance": {
                "source": self.source,
                "created_at": self.created_at,
                "created_by": self.created_by,
                "confirmed_at": self.confirmed_at,
                "times_seen": self.times_seen,
                "times_held": self.times_held,
                "origin_id": self.origin_id,
                "promoted_by": self.promoted_by,
                "pending_by": self.pending_by,
                "approved_by": self.approved_by,
            },
            "status": self.status,
            "status_reason": self.status_reason,
            "fact": self.is_fact,
            "evidence": self.evidence,
            "text": describe(self),
            "next_step": self.next_step,
        }


def _fmt(key: str, value: Any) -> str:
    if value is None:
        return "no limit" if key in ("memory_bytes", "walltime_s") else "none"
    if key == "memory_bytes":
        return format_bytes(int(value))
    if key == "walltime_s":
        return format_duration(int(value))
    if key in ("gpus", "cpus"):
        return f"{value} {key[:-1].upper() if key == 'gpus' else 'CPU'}{'s' if value != 1 else ''}"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "none"
    return str(value)


def _day(ts: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(ts))


def _gpu_at(lesson: Lesson) -> str:
    """What a GPU out-of-memory ending asked for and used: 'with 1 GPU (A100), using at most 39.5G of it'."""
    req = (lesson.evidence[-1].get("requested") if lesson.evidence else None) or lesson.requested
    gpus = req.get("gpus") or 0
    types = ", ".join(req.get("gpu_types") or []) or "any type"
    text = f" with {_fmt('gpus', gpus)} ({types})" if gpus else " with no GPU requested"
    peaks = [(e.get("used") or {}).get("gpu_mem_peak_bytes") for e in lesson.evidence]
    peak = max((p for p in peaks if p), default=None)
    return text + (f", using at most {format_bytes(int(peak))} of GPU memory" if peak else "")


def describe(lesson: Lesson) -> str:
    """The one-paragraph text an agent reads, hedged unless the lesson is active."""
    what = "this command" if lesson.template else plain(lesson.application or "this application", 100)
    times = _TIMES.get(lesson.times_seen, f"{lesson.times_seen} times")
    fix_changes: dict[str, list[Any]] = (lesson.fix or {}).get("changes", {})
    key = next(iter(fix_changes), _KIND_KEY.get(lesson.kind))
    at = ""
    if lesson.kind == "cuda_oom" and not fix_changes:
        at = _gpu_at(lesson)
    elif key and key in lesson.requested:
        failed = {json.dumps(e.get("requested", {}).get(key), default=str) for e in lesson.evidence}
        values = [json.loads(v) for v in sorted(failed)] or [lesson.requested.get(key)]
        at = " at " + " and ".join(_fmt(key, v) for v in values[:3])
    by = f"{lesson.source} {plain(lesson.created_by, 64)}"
    if lesson.source in ("person", "agent") and not lesson.evidence:  # their words, quoted and attributed first
        text = f"{what}: noted by {by}: {quoted(lesson.cause)}"
    else:
        text = f"{what} ended {plain(lesson.state or 'badly', 40)} {times}{at} ({plain(lesson.cause)})"
    if lesson.fix and not fix_changes and lesson.fix.get("text"):
        text += f"; fix suggested by {by}: {quoted(str(lesson.fix['text']))}"
    elif lesson.fix:
        parts = [
            f"{k.removesuffix('_bytes').removesuffix('_s')} {_fmt(k, new)}"
            for k, (_old, new) in fix_changes.items()
            if k != "arguments"
        ]
        if "arguments" in fix_changes:
            old_args, new_args = (lesson.fix.get("arguments") or ["", ""])[:2]
            new, old = (plain(str(a), 120).replace("`", "'") for a in (new_args, old_args))
            parts.append(f"`{new}` instead of `{old}`" if old_args else f"`{new}` added")
        ok_job = (lesson.fix.get("evidence") or [None, None])[-1]
        text += f"; it completed with {', '.join(parts)} on {_day(float(lesson.fix.get('at', 0)))}" + (
            f" (job {ok_job})" if ok_job else ""
        )
        if lesson.times_held > 1:
            text += f", and held {lesson.times_held} times since"
    else:
        text += "; no fix known yet"
    if lesson.pending_by is not None:
        who = plain(lesson.pending_by, 64)
        where = f"{lesson.scope} {plain(lesson.scope_name, 64)}"
        return f"proposed by {who} for {where}, awaits a second member or an admin: {text}"
    if lesson.status == "stale":
        return f"unconfirmed ({plain(lesson.status_reason or 'stale')}): {text}"
    if lesson.status == "invalid":
        return f"no longer true ({plain(lesson.status_reason or 'invalid')}): {text}"
    return text
