"""Admitting a job: its dependencies resolved, the plug-ins' admissions merged, its notices in JSON form."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from frontdesk.errors import SpecError
from frontdesk.events.models import Event, EventKind
from frontdesk.jobs.record import JobRecord, Scalar, scoped_key
from frontdesk.jobs.state import JobState
from frontdesk.plugins import Accepts, Admission, Admits, Notice, Plugin, SubmitContext
from frontdesk.spec.model import JobSpec
from frontdesk.store.arrays import task as array_task
from frontdesk.store.jobs import JobStore

__all__ = [
    "TracksTurns",
    "admit",
    "stored_context",
    "tell_accepted",
    "job_columns",
    "keyed",
    "notice_list",
    "resolve_deps",
    "session_key",
    "spec_digest",
    "submitted_events",
    "warnings",
]


@runtime_checkable
class TracksTurns(Protocol):
    """A plug-in that knows an agent session's turns (the agents plug-in, from the harness's hooks)."""

    def turn_of(self, session: str, principal: str, spec_hash: str) -> tuple[int, int] | None:
        """(turn, n): the session's current turn and how many identical submissions it made before in it."""
        ...


def spec_digest(spec: JobSpec) -> str:
    """A digest of what the spec asks to run (its key and session left out): equal specs, equal digests."""
    body = spec.model_dump(mode="json", exclude_none=True, exclude={"idempotency_key", "session"})
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]


def session_key(session: str, turn: int, n: int, digest: str) -> str:
    """The idempotency key of a session's n-th submission of one spec in one turn (issue 18).

    A turn replayed after a resume submits the same specs in the same order, so it gets the same keys and
    the jobs it made before; a later turn, or a second identical submission in the same turn, gets a new one.
    """
    who = session if len(session) <= 96 else hashlib.sha256(session.encode()).hexdigest()[:32]
    return f"session:{who}:turn{turn}:{digest}:{n}"


def keyed(spec: JobSpec, ctx: SubmitContext, plugins: Sequence[Plugin]) -> JobSpec:
    """The spec with a key derived from its session and turn, when it came from a session without one."""
    sid = spec.session or ctx.session
    if spec.idempotency_key or not sid:
        return spec
    digest = spec_digest(spec)
    for plugin in plugins:
        if isinstance(plugin, TracksTurns):
            got = plugin.turn_of(sid, ctx.principal, digest)
            if got is not None:
                return spec.model_copy(update={"idempotency_key": session_key(sid, got[0], got[1], digest)})
    return spec


_TASK_ID = re.compile(r"([0-9]{1,18})_([0-9]{1,7})")
"""`12_3`: task 3 of array 12 (bounded: SQLite's integers are 64-bit)."""


def resolve_deps(store: JobStore, deps: Sequence[int | str], principal: str) -> list[int]:
    """Job ids for `depends_on` entries (ids, `12_3` for task 3 of array 12 as Slurm writes it, or names of this
    principal's newest job); SpecError if unknown."""
    out = []
    for dep in deps:
        as_task = _TASK_ID.fullmatch(str(dep))
        if isinstance(dep, int) or (str(dep).isascii() and str(dep).isdigit()):
            found: int | None = int(dep) if store.state_of(int(dep)) is not None else None  # no record built
        elif as_task is not None:  # a job may be named so too
            rec = array_task(store, int(as_task[1]), int(as_task[2])) or store.by_name(str(dep), principal)
            found = None if rec is None else rec.id
        else:
            rec = store.by_name(str(dep), principal)
            found = None if rec is None else rec.id
        if found is None:
            raise SpecError(f"depends_on: no job {dep!r}", field="depends_on")
        out.append(found)
    return out


def admit(plugins: Sequence[Plugin], spec: JobSpec, ctx: SubmitContext) -> Admission:
    """Every plug-in's `admit` in order (one may raise Denied: nothing is stored yet); later decisions win."""
    total = Admission()
    for plugin in plugins:
        if not isinstance(plugin, Admits):
            continue
        result = plugin.admit(spec, ctx)
        if result is None:
            continue
        total.notices.extend(result.notices)
        if result.meta is not None:
            total.metas[plugin.name] = result.meta
        for attr in ("job_class", "class_reason", "partition", "priority", "qos"):
            if getattr(result, attr) is not None:
                setattr(total, attr, getattr(result, attr))
    return total


def warnings(notices: Sequence[Notice]) -> list[str]:
    """The notices' texts shown to the submitter (quiet ones were said before: left out)."""
    return [n.text for n in notices if not n.data.get("quiet")]


def notice_list(notices: Sequence[Notice]) -> list[dict[str, Any]]:
    """JSON form of notices."""
    return [{"source": n.source, "text": n.text, **n.data} for n in notices]


def job_columns(
    spec: JobSpec, ctx: SubmitContext, deps: list[int], admission: Admission, context: dict[str, Any], now: float
) -> dict[str, Scalar]:
    """The new job's row (without `backend`): the spec with resolved dependencies, the plug-ins' decisions."""
    spec_json = spec.model_dump(mode="json", exclude_none=True)
    spec_json["depends_on"] = deps
    return {
        "name": spec.name,
        "spec": json.dumps(spec_json),
        "context": json.dumps(context),
        "state": JobState.PENDING.value,
        "reason": "Dependency" if deps else "Queued",
        "principal": ctx.principal,
        "session": spec.session or ctx.session,
        "job_class": admission.job_class or (spec.type.value if spec.type else None),
        "class_reason": admission.class_reason or ("declared in the spec" if spec.type else None),
        "partition": admission.partition or spec.pool,
        "priority": admission.priority or 0,
        "qos": admission.qos,
        "idempotency_key": scoped_key(ctx.principal, spec.idempotency_key) if spec.idempotency_key else None,
        "submitted_at": now,
        "eligible_at": None if deps else now,
        "plugin_meta": json.dumps(admission.metas, sort_keys=True),
    }


def submitted_events(job_id: int, spec: JobSpec, ctx: SubmitContext, admission: Admission) -> list[Event]:
    """job.submitted, then one job.warning per notice."""
    who: dict[str, Any] = {"job_id": job_id, "session": spec.session or ctx.session, "principal": ctx.principal}
    data = {
        "name": spec.name,
        "warnings": warnings(admission.notices),
        "class": admission.job_class,
        "partition": admission.partition,
        "source": ctx.source,
    }
    events = [Event(EventKind.JOB_SUBMITTED, data=data, **who)]
    for notice in admission.notices:
        note = {"source": notice.source, "text": notice.text, **notice.data}
        events.append(Event(EventKind.JOB_WARNING, data=note, **who))
    return events


def stored_context(ctx: SubmitContext, env_rules: Mapping[str, Any]) -> dict[str, Any]:
    """What a job keeps of its submit context: cwd, harness, source, uid, the environment the site lets through."""
    from frontdesk.jobenv import site_filter

    env = site_filter(ctx.env, env_rules)
    return {"cwd": ctx.cwd, "harness": ctx.harness, "source": ctx.source, "env": env, "uid": ctx.uid}


def tell_accepted(plugins: Sequence[Plugin], records: Sequence[JobRecord]) -> None:
    """Each plug-in's `on_accepted` for stored jobs (a failing plug-in is logged, never fails the submission)."""
    import logging

    for plugin in plugins:
        if isinstance(plugin, Accepts):
            for rec in records:
                try:
                    plugin.on_accepted(rec)  # the row (with every plug-in's meta) is stored
                except Exception:
                    logging.getLogger("frontdesk.gateway").exception("plug-in %s failed on job %s", plugin.name, rec.id)
