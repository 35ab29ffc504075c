"""Accepting a job array: its task rows built and stored with the parent in ONE transaction, in a worker thread.

A 10,000-task array takes SQLite ~1-2 s to insert (ten indexes and the `job_deps` trigger per row); run on the
event loop, health, status and every long-poll waited it out. The rows are built and the transaction run on a
connection of its own in a thread (`store/arrays.store_array`): the loop keeps answering, its readers see the
array only once committed, whole, and a kill -9 before COMMIT leaves none of it.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from typing import TYPE_CHECKING, Any

from frontdesk.errors import SpecError
from frontdesk.events.models import Event
from frontdesk.jobs.record import JobRecord, Scalar
from frontdesk.plugins import Admission, SubmitContext
from frontdesk.spec.arrays import render_argv, render_script, sweep_env, sweep_points
from frontdesk.spec.model import JobSpec
from frontdesk.store import arrays as q

if TYPE_CHECKING:
    from frontdesk.gateway import Gateway

__all__ = ["accept_array", "sent_again"]

_DROPPED = ("array", "sweep", "array_report", "aftercorr", "idempotency_key")
"""Spec fields of the array that its tasks do not carry."""


def _corresponding(gw: Gateway, spec: JobSpec, principal: str, size: int) -> list[int] | None:
    """Task ids of the `aftercorr` array, by position (SpecError unless it is an array of the same size)."""
    if spec.aftercorr is None:
        return None
    ref = spec.aftercorr
    as_id = isinstance(ref, int) or (str(ref).isascii() and str(ref).isdigit())  # api/depends.py checked only these
    other = gw.store.get(int(ref)) if as_id else gw.store.by_name(str(ref), principal)
    if other is None or other.array_size is None:
        raise SpecError(f"aftercorr: no array {ref!r}", field="aftercorr")
    if other.array_size != size:
        raise SpecError(f"aftercorr: array {other.id} has {other.array_size} tasks, this one {size}", field="aftercorr")
    return [t.id for t in q.tasks(gw.store, other.id)]


def _task_columns(
    spec: JobSpec, parent: dict[str, Scalar], deps: list[int], corr: list[int] | None
) -> list[dict[str, Scalar]]:
    """One row per task: the array's spec with its sweep point filled in, its own dependencies."""
    rng = spec.array_range()
    assert rng is not None
    points = sweep_points(spec.sweep) if spec.sweep is not None else None
    base = json.loads(str(parent["spec"]))
    for key in _DROPPED:
        base.pop(key, None)
    out = []
    for pos, index in enumerate(rng.indices):
        data = dict(base)
        task_deps = [*deps, corr[pos]] if corr is not None else list(deps)
        data["depends_on"] = task_deps
        if points is not None:
            point = points[index]
            if spec.command:
                data["command"] = render_argv(spec.command, point)
            if spec.script is not None:
                data["script"] = render_script(spec.script, point)
            data["env"] = {**spec.env, **sweep_env(point)}
        cols = dict(parent, name=None, idempotency_key=None, request_id=None, spec=json.dumps(data), array_index=index)
        cols["reason"] = "Dependency" if task_deps else "Queued"
        cols["eligible_at"] = None if task_deps else parent["submitted_at"]
        out.append(cols)
    return out


async def accept_array(
    gw: Gateway, spec: JobSpec, ctx: SubmitContext, columns: dict[str, Scalar], admission: Admission, deps: list[int]
) -> dict[str, Any]:
    """Store the parent and every task in ONE transaction, built and run in a worker thread (the loop keeps
    answering meanwhile: store/arrays.store_array); the tick hands the tasks over."""
    from frontdesk.core.submission import notice_list, tell_accepted, warnings

    rng = spec.array_range()
    assert rng is not None
    corr = _corresponding(gw, spec, ctx.principal, rng.size)
    try:
        stored = await asyncio.to_thread(_build_and_store, gw, spec, ctx, columns, admission, (deps, corr))
    except sqlite3.IntegrityError:  # the same key or request stored meanwhile by a concurrent call
        row = gw.store.sent_before(ctx.principal, spec.idempotency_key, ctx.request_id)
        if row is None:
            raise
        return sent_again(gw, row)
    for event in stored.events:
        gw.bus.fanout(event)
    accepted = [stored.parent, *stored.tasks]
    for start in range(0, len(accepted), 1000):  # committed: the plug-ins learn of it while the loop answers others
        tell_accepted(gw.plugins, accepted[start : start + 1000])
        await asyncio.sleep(0)
    first = [t.id for t in stored.tasks]
    gw.waiting.examine(first)  # the tick hands the tasks over (within `%N`), the submitter is answered now
    gw._wake.set()
    from frontdesk.core.arrays import public

    out = public(gw, gw._fresh(stored.parent.id))
    out["array"]["task_ids"] = [first[0], first[-1]]
    return {**out, "warnings": warnings(admission.notices), "notices": notice_list(admission.notices)}


def _build_and_store(
    gw: Gateway,
    spec: JobSpec,
    ctx: SubmitContext,
    columns: dict[str, Scalar],
    admission: Admission,
    deps_corr: tuple[list[int], list[int] | None],
) -> q.StoredArray:
    """In a worker thread: the task rows (pure) and the one transaction that stores them, on its own connection."""
    from frontdesk.core.submission import submitted_events

    rng = spec.array_range()
    assert rng is not None
    backend = gw.backend.name
    rows = [dict(t, backend=backend) for t in _task_columns(spec, columns, *deps_corr)]

    def events_of(parent_id: int) -> list[Event]:
        events = submitted_events(parent_id, spec, ctx, admission)
        events[0].data["array"] = {"size": rng.size, "max_running": rng.max_running}
        return events

    parent = dict(columns, array_size=rng.size, backend=backend)
    return q.store_array(gw.settings.db_path, parent, rows, events_of)


def sent_again(gw: Gateway, row: JobRecord) -> dict[str, Any]:
    """The answer to a submission sent again (its request id or idempotency key seen): the job as the first
    answer showed it; an array with its `array` part (size, %N, counts, task_ids), which a client resending
    after a lost answer reads as it would have read the first."""
    from frontdesk.core.arrays import public

    out = public(gw, row)
    if row.array_size is not None:
        out["array"]["task_ids"] = q.task_id_range(gw.store, row.id)
    return {**out, "warnings": [], "duplicate": True}
