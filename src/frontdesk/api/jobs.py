"""`/v1` job routes: submit, list, queue, cluster, one job, cancel, report, logs, wait, notify, health.

Each route reads the gateway and the access rules from `request.app.state` (set by `create_app`) and checks
the caller (`request.state.caller`) before it reads or acts: refusals are 403 and journalled (api/access.py).
"""

from __future__ import annotations

import asyncio
import functools
import os
import time
from typing import Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from frontdesk.api import facility
from frontdesk.api.access import Access, Action
from frontdesk.api.depends import may_depend
from frontdesk.api.quotas import admit_jobs
from frontdesk.api.reportview import report_for, reports_for
from frontdesk.client import MAX_WAIT_S
from frontdesk.core import arrays
from frontdesk.core.batch import MAX_BATCH, submit_batch
from frontdesk.errors import Conflict, SpecError, UserError
from frontdesk.gateway import Gateway
from frontdesk.identity import Caller
from frontdesk.jobs.ids import Id
from frontdesk.jobs.state import JobState
from frontdesk.plugins import SubmitContext, backend_classes
from frontdesk.spec.bounds import check_text
from frontdesk.spec.model import JobSpec, parse_spec_text, validate_spec
from frontdesk.tails import read_tail_lines

__all__ = ["SubmitBody", "WaitBody", "accept", "owner_of", "router", "shown", "wait_for"]

router = APIRouter(prefix="/v1")


class SubmitBody(BaseModel):
    """POST /v1/jobs."""

    model_config = ConfigDict(extra="forbid")
    spec: dict[str, Any] | None = None
    spec_text: str | None = Field(default=None, max_length=1_000_000)
    format: Literal["yaml", "json"] | None = None
    context: dict[str, Any] = Field(default_factory=dict)


class BatchItem(BaseModel):
    """One job of a batch: its spec as data or as YAML/JSON text."""

    model_config = ConfigDict(extra="forbid")
    spec: dict[str, Any] | None = None
    spec_text: str | None = Field(default=None, max_length=1_000_000)
    format: Literal["yaml", "json"] | None = None


class BatchBody(BaseModel):
    """POST /v1/jobs/batch: many jobs, one transaction, all or none."""

    model_config = ConfigDict(extra="forbid")
    jobs: list[BatchItem] = Field(min_length=1, max_length=MAX_BATCH)
    context: dict[str, Any] = Field(default_factory=dict)


class WaitBody(BaseModel):
    """POST /v1/wait."""

    model_config = ConfigDict(extra="forbid")
    ids: list[Id] = Field(min_length=1, max_length=10000)
    mode: Literal["any", "all"] = "all"
    timeout: float | None = Field(default=None, ge=0, le=MAX_WAIT_S)


class NotifyBody(BaseModel):
    """POST /v1/notify: the push path."""

    model_config = ConfigDict(extra="forbid")
    backend: str
    ids: list[str] = Field(max_length=10000)
    info: dict[str, Any] = Field(default_factory=dict)


def owner_of(row: Any) -> str | None:
    """The principal owning a stored job (a row or a JobRecord)."""
    owner = row["principal"]
    return None if owner is None else str(owner)


def _str(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None


def _parts(request: Request) -> tuple[Gateway, Access, Caller]:
    state = request.app.state
    return state.gw, state.access, request.state.caller


_LISTED_SPEC = ("name", "type", "trial", "pool", "resources", "depends_on", "array")
"""What of a job's spec a caller who may list the job but not read it sees: squeue's columns (resources, the
dependency ids). Never its command, script, environment, working directory, output paths or keys."""


def shown(gw: Gateway, access: Access, caller: Caller, row: Any) -> dict[str, Any]:
    """A job's record for this caller: whole for those who may read it (owner, admins, labmates where the site
    says so); for the others `[access] private_jobs = false` lets list it, the record as squeue shows it."""
    out = arrays.public(gw, row)
    if access.may(caller, owner_of(row), Action.READ):
        return out
    spec = out.get("spec") or {}
    out["spec"] = {k: spec[k] for k in _LISTED_SPEC if k in spec}
    out["session"] = None  # the owner's agent session: its id is a name to squat
    if row.terminal:
        out["reason"] = None  # how it ended is the report's (a failure's text names paths, commands)
    return out


def _job(request: Request, job_id: int, action: Action, verb: str) -> Any:
    """The job, once the caller may do `action` on it (NotFound, or Forbidden journalled)."""
    gw, access, caller = _parts(request)
    row = gw.get_job(job_id)
    access.job(caller, job_id, owner_of(row), action, verb)
    return row


@router.get("/health")
async def health(request: Request) -> dict[str, Any]:
    gw = request.app.state.gw
    return {
        "ok": True,
        "backend": gw.backend.name,
        "pid": os.getpid(),
        "uptime_s": time.time() - gw.started_at,
        "last_seq": gw.store.last_seq(),
        "plugins": [getattr(p, "name", "?") for p in gw.plugins],
    }


def _spec(body: SubmitBody | BatchItem) -> JobSpec:
    if body.spec is not None and body.spec_text is not None:
        raise UserError("give either 'spec' or 'spec_text', not both")
    if body.spec is not None:
        return validate_spec(body.spec)
    if body.spec_text is not None:
        return parse_spec_text(body.spec_text, body.format)
    raise UserError("a job needs 'spec' or 'spec_text'")


def _context(caller: Caller, c: dict[str, Any]) -> SubmitContext:
    check_text(c, "context")  # lone surrogates and NUL bytes cannot be stored: 422, not 500
    raw_env = c.get("env")
    env: dict[str, Any] = raw_env if isinstance(raw_env, dict) else {}
    return SubmitContext(
        principal=caller.user,
        uid=caller.uid,
        groups=caller.groups,  # identity.groups_of: getgrouplist, primary first, cached a minute
        session=_str(c.get("session")),
        harness=_str(c.get("harness")),
        cwd=_str(c.get("cwd")),
        source=_str(c.get("source")) or "api",
        env={str(k): str(v) for k, v in env.items()},
        extra={k: v for k, v in c.items() if k not in _CONTEXT_FIELDS},
        request_id=_request_id(c.get("request_id")),
    )


_CONTEXT_FIELDS = ("session", "harness", "cwd", "source", "env", "request_id")
_REQUEST_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")


def _request_id(value: Any) -> str | None:
    """`context.request_id`: 8 to 64 letters, digits, '-' or '_' (a client's random id for one request)."""
    if value is None:
        return None
    if not isinstance(value, str) or not 8 <= len(value) <= 64 or not set(value) <= _REQUEST_ID_CHARS:
        raise SpecError("context.request_id: 8 to 64 letters, digits, '-' or '_'", field="context.request_id")
    return value


def _own_duplicate(access: Access, caller: Caller, result: dict[str, Any]) -> None:
    if result.get("duplicate") and not (caller.admin or caller.owns(result.get("principal"))):
        # another user's idempotency key: never hand their job record (spec, environment) to this caller
        raise access.deny(caller, "reuse the idempotency key of", f"job {result['id']}", result.get("principal"))


async def accept(gw: Gateway, access: Access, caller: Caller, body: SubmitBody) -> dict[str, Any]:
    """POST /v1/jobs once the body parsed: the route's work, shared with its fast path (api/fastsubmit.py)."""
    spec = _spec(body)
    may_depend(gw, access, caller, spec)
    admit_jobs(gw, caller, [spec])  # the per-user cap: 429 before anything is stored
    result: dict[str, Any] = await gw.submit(spec, _context(caller, body.context))
    _own_duplicate(access, caller, result)
    return result


@router.post("/jobs")
async def submit(body: SubmitBody, request: Request) -> dict[str, Any]:
    return await accept(*_parts(request), body)


@router.post("/jobs/batch")
async def submit_many(body: BatchBody, request: Request) -> dict[str, Any]:
    gw, access, caller = _parts(request)
    specs = []
    for pos, item in enumerate(body.jobs):
        try:
            specs.append(_spec(item))
        except UserError as exc:  # SpecError included: which item, then what
            raise type(exc)(f"jobs[{pos}]: {exc.message}") from None
        may_depend(gw, access, caller, specs[-1])
    admit_jobs(gw, caller, specs)
    results = await submit_batch(gw, specs, _context(caller, body.context))
    for result in results:
        _own_duplicate(access, caller, result)
    return {"jobs": results}


@router.get("/jobs")
async def list_jobs(
    request: Request,
    state: list[str] = Query(default=[]),
    session: str | None = None,
    principal: str | None = None,
    name: str | None = None,
    active: bool = False,
    limit: int = Query(default=200, ge=1, le=100000),
    array: int | None = Query(default=None, ge=1, le=2**63 - 1),
    tasks: bool = False,
) -> list[dict[str, Any]]:
    gw, access, caller = _parts(request)
    if session is not None and principal is None:
        principal = caller.user  # a session id names the caller's own session (another user's same id is theirs)
    if not access.may(caller, None, Action.LIST) and not access.roles.labmates_read_jobs:
        if principal not in (None, caller.user):
            return []  # others' jobs are private: filtered out, as squeue does with PrivateData=jobs
        principal = caller.user
    rows = gw.store.select(
        state=_states(state),
        session=session,
        principal=principal,
        name=name,
        active=active,
        limit=limit,
        top_level=not tasks and array is None,  # an array is one line; its tasks with ?array=ID or ?tasks=true
        array_id=array,
    )
    listed = [r for r in rows if access.may(caller, owner_of(r), Action.LIST)]
    if session is not None:  # a session id is its owner's (never shown to those who only list): no oracle on it
        listed = [r for r in listed if access.may(caller, owner_of(r), Action.READ)]
    access.audit_list(caller, "jobs", [(r["id"], owner_of(r)) for r in listed])  # an admin's view of others'
    return [shown(gw, access, caller, r) for r in listed]


@functools.cache
def _backends() -> frozenset[str]:
    """The installed backends' names (read once: entry points are a scan of the installed packages)."""
    return frozenset(backend_classes())


def _states(given: list[str]) -> list[str]:
    """`?state=` values, any case; an unknown one is bad input (an empty list would read as "none match")."""
    known = {s.value for s in JobState}
    out = [s.upper() for s in given]
    bad = [s for s in out if s not in known]
    if bad:
        raise UserError(f"state: no job state {bad[0][:40]!r} (one of {', '.join(sorted(known))})")
    return out


@router.get("/queue")
async def queue(request: Request) -> dict[str, Any]:
    gw, access, caller = _parts(request)
    rows = [r for r in gw.store.active() if access.may(caller, owner_of(r), Action.LIST)]
    access.audit_list(caller, "jobs", [(r["id"], owner_of(r)) for r in rows])
    return {"jobs": [shown(gw, access, caller, r) for r in rows], "inventory": gw.backend.inventory().to_dict()}


def _own_rows(info: Any, caller: Caller, access: Access) -> Any:
    """A plug-in's cluster view with other principals' rows (e.g. trial revocations) only where the caller may see."""
    if not isinstance(info, dict):
        return info
    out = dict(info)
    for key, rows in info.items():
        if isinstance(rows, list) and rows and all(isinstance(r, dict) and "principal" in r for r in rows):
            out[key] = [r for r in rows if access.may(caller, owner_of(r), Action.LIST)]
    return out


def gpu_holders(device: dict[str, Any], caller: Caller, access: Access) -> dict[str, Any]:
    """A device's holders: job and principal shown only where the caller may see that job (memory always)."""
    rows = [
        h if access.may(caller, h["principal"] or None, Action.LIST) else {**h, "job_id": None, "principal": None}
        for h in device["holders"]
    ]
    return {**device, "holders": rows}


@router.get("/cluster")
async def cluster(request: Request) -> dict[str, Any]:
    gw, access, caller = _parts(request)
    out: dict[str, Any] = {"backend": gw.backend.name, "inventory": gw.backend.inventory().to_dict()}
    gpu_view = getattr(gw.backend, "gpu_view", None)  # the embedded backend: each GPU's free memory and holders
    if gpu_view is not None:
        out["gpus"] = [gpu_holders(d, caller, access) for d in gpu_view()]
    for plugin in gw.plugins:
        info = getattr(plugin, "cluster_info", None)
        if info is not None:
            out[plugin.name] = _own_rows(info(), caller, access)
    return out


@router.get("/jobs/{job_id}")
async def get_job(job_id: Id, request: Request) -> dict[str, Any]:
    gw, access, caller = _parts(request)
    return shown(gw, access, caller, _job(request, job_id, Action.LIST, "see"))


@router.get("/jobs/{job_id}/tasks/{index}")
async def get_task(job_id: Id, index: Id, request: Request) -> dict[str, Any]:
    """Task `index` of array `job_id` (what `frontdesk cancel 12_3` names)."""
    from frontdesk.errors import NotFound
    from frontdesk.store.arrays import task

    gw, access, caller = _parts(request)
    row = _job(request, job_id, Action.LIST, "see")
    found = task(gw.store, job_id, index) if row.array_size is not None else None
    if found is None:
        raise NotFound(f"no task {index} in job {job_id}" + ("" if row.array_size is not None else " (not an array)"))
    return shown(gw, access, caller, found)


@router.post("/jobs/{job_id}/cancel")
async def cancel(job_id: Id, request: Request) -> dict[str, Any]:
    _job(request, job_id, Action.ACT, "cancel")
    result: dict[str, Any] = await request.app.state.gw.cancel(job_id)
    return result


@router.get("/jobs/{job_id}/report")
async def report(job_id: Id, request: Request) -> dict[str, Any]:
    row = _job(request, job_id, Action.READ, "read the report of")
    gw, caller = request.app.state.gw, request.state.caller
    rep = report_for(gw, caller, owner_of(row), gw.report(job_id))  # a labmate's: without log lines
    if rep is None:
        raise Conflict(f"job {job_id} has not ended yet ({row['state']})")
    return rep


@router.get("/jobs/{job_id}/logs")
async def logs(
    job_id: Id,
    request: Request,
    tail: int = Query(default=50, ge=1, le=10000),
    stream: Literal["stdout", "stderr"] = "stdout",
) -> dict[str, Any]:
    gw = request.app.state.gw
    row = _job(request, job_id, Action.LOGS, "read the logs of")
    stored = row.stdout_path if stream == "stdout" else row.stderr_path
    path = stored or str(gw.job_dir(job_id, row.attempt) / f"{stream}.log")
    raw = await asyncio.to_thread(read_tail_lines, path, tail, owner=row.runs_as())  # N lines when it has them
    lines = [gw.redact(ln) for ln in raw]
    return {"job_id": job_id, "stream": stream, "path": path, "lines": lines}


async def wait_for(gw: Gateway, access: Access, caller: Caller, body: WaitBody) -> JSONResponse:
    """POST /v1/wait once the body parsed: the route's work and answer, shared with its fast path (api/fastwait.py)."""
    owners = {job_id: owner_of(gw.get_job(job_id)) for job_id in body.ids}
    for job_id, owner in owners.items():
        access.job(caller, job_id, owner, Action.READ, "wait for")
    result: dict[str, Any] = await gw.wait(body.ids, body.mode, body.timeout)
    reports_for(gw, caller, owners, result)  # a labmate's: without log lines
    # Plain JSON data already: encoded once here, not walked again by FastAPI's encoder (the wake path).
    return JSONResponse(result)


@router.post("/wait")
async def wait(body: WaitBody, request: Request) -> JSONResponse:
    return await wait_for(*_parts(request), body)


@router.post("/notify")
async def notify(body: NotifyBody, request: Request) -> dict[str, Any]:
    # a re-query of named attempts: its own shepherds, root and [access] notifiers only (refusals journalled)
    request.app.state.access.notify(request.state.caller)
    if body.backend not in (known := _backends()):
        raise UserError(f"backend: no backend {body.backend[:40]!r} (one of {', '.join(sorted(known))})")
    facility.fan_out(request.app.state.gw, body.backend, body.ids, body.info)  # stored for the user's gateway
    changed = await request.app.state.gw.notify(body.backend, body.ids)
    return {"ok": True, "changed": changed}
