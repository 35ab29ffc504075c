"""Many jobs accepted in ONE transaction (`POST /v1/jobs/batch`): each checked as a single submission would be
(idempotency key, dependencies, plug-ins), then every row and event stored together; the tick hands them over.

All or nothing: a bad item refuses the whole batch with its position (`jobs[3]: ...`) and nothing is stored.
An item whose idempotency key was used before answers that job (`duplicate: true`), as `POST /v1/jobs` does.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from frontdesk.core.arrayaccept import sent_again
from frontdesk.errors import FrontdeskError, SpecError, UserError
from frontdesk.plugins import Admission, SubmitContext
from frontdesk.spec.model import JobSpec
from frontdesk.store import arrays as q
from frontdesk.store.jobs import job_record

if TYPE_CHECKING:
    from frontdesk.gateway import Gateway

__all__ = ["MAX_BATCH", "submit_batch"]

MAX_BATCH = 1000
"""The most jobs one batch may hold (an array of up to 10,000 tasks is one spec, not a batch)."""


def _prepare(
    gw: Gateway,
    spec: JobSpec,
    ctx: SubmitContext,
    now: float,
    seen: dict[str, Admission],
    seen_deps: dict[tuple[int | str, ...], list[int]],
) -> tuple[dict[str, Any], Admission]:
    from frontdesk.core.submission import admit, job_columns, resolve_deps, stored_context

    if spec.is_array:
        raise UserError("an array cannot be part of a batch: submit it on its own (it is one transaction already)")
    wanted = tuple(spec.depends_on)
    deps = seen_deps[wanted] if wanted in seen_deps else resolve_deps(gw.store, wanted, ctx.principal)
    seen_deps[wanted] = deps
    # the plug-ins decide on what a job is, not on its key: the same job twice in one batch is admitted once
    same = spec.model_dump_json(exclude={"idempotency_key"})
    admission = seen.get(same) or admit(gw.plugins, spec, ctx)
    seen[same] = admission
    columns = job_columns(spec, ctx, deps, admission, stored_context(ctx, gw.settings.section("env")), now)
    return dict(columns, backend=gw.backend.name), admission


def _refuse(pos: int, exc: FrontdeskError) -> FrontdeskError:
    return type(exc)(f"jobs[{pos}]: {exc.message}") if isinstance(exc, SpecError | UserError) else exc


async def submit_batch(gw: Gateway, specs: list[JobSpec], ctx: SubmitContext) -> list[dict[str, Any]]:
    """Accept every spec or none; one result per spec, in order (a job record with `warnings`)."""
    from frontdesk.core.submission import keyed, notice_list, submitted_events, tell_accepted, warnings

    if not specs or len(specs) > MAX_BATCH:
        raise UserError(f"a batch holds 1 to {MAX_BATCH} jobs, got {len(specs)}")
    specs = [keyed(spec, ctx, gw.plugins) for spec in specs]  # issue 18: a replayed turn's batch gets its jobs
    now = time.time()
    results: list[dict[str, Any] | None] = [None] * len(specs)
    fresh: list[tuple[int, JobSpec, dict[str, Any], Admission]] = []
    keys: dict[str, int] = {}
    seen: dict[str, Admission] = {}
    seen_deps: dict[tuple[int | str, ...], list[int]] = {}
    for pos, spec in enumerate(specs):
        key = spec.idempotency_key
        if key and key in keys:
            raise UserError(f"jobs[{pos}]: idempotency_key repeats that of jobs[{keys[key]}]")
        if key:
            keys[key] = pos
            row = gw.store.by_idempotency_key(ctx.principal, key)
            if row is not None:
                results[pos] = sent_again(gw, row)
                continue
        try:
            columns, admission = _prepare(gw, spec, ctx, now, seen, seen_deps)
        except FrontdeskError as exc:
            raise _refuse(pos, exc) from None
        fresh.append((pos, spec, columns, admission))
    with gw.store.transaction():
        ids = q.insert_rows(gw.store, [cols for _, _, cols, _ in fresh])
        stored = [
            gw.store.append_event(e)
            for (_, spec, _, admission), job_id in zip(fresh, ids, strict=True)
            for e in submitted_events(job_id, spec, ctx, admission)
        ]
    for event in stored:
        gw.bus.fanout(event)
    records = q.many(gw.store, ids)
    tell_accepted(gw.plugins, records)
    gw.waiting.examine(ids)  # the tick hands them over; the submitter is answered now
    gw._wake.set()
    for (pos, _, _, admission), rec in zip(fresh, records, strict=True):
        said = {"warnings": warnings(admission.notices), "notices": notice_list(admission.notices)}
        results[pos] = {**job_record(rec), **said}
    return [r for r in results if r is not None]
