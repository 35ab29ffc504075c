"""The gateway's HTTP API (FastAPI). Routes are thin: validate, call the Gateway, map errors in one place."""

from __future__ import annotations

import asyncio
import json
import os
import pwd
import re
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Literal

from fastapi import APIRouter, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from frontdesk.api.access import Access, Action
from frontdesk.api.auth import Authenticator, Unauthenticated, tokens_from_settings
from frontdesk.api.limits import Limits, max_body_from
from frontdesk.errors import Denied, Forbidden, FrontdeskError, UserError
from frontdesk.events.models import Event
from frontdesk.gateway import Gateway
from frontdesk.identity import Caller, Roles
from frontdesk.plugins import SubmitContext
from frontdesk.spec.bounds import check_text
from frontdesk.spec.model import parse_spec_text, validate_spec
from frontdesk.store.jobs import job_record
from frontdesk.tails import read_tail_lines

__all__ = ["create_app"]


class SubmitBody(BaseModel):
    """POST /v1/jobs."""

    model_config = ConfigDict(extra="forbid")
    spec: dict[str, Any] | None = None
    spec_text: str | None = Field(default=None, max_length=1_000_000)
    format: Literal["yaml", "json"] | None = None
    context: dict[str, Any] = Field(default_factory=dict)


class WaitBody(BaseModel):
    """POST /v1/wait."""

    model_config = ConfigDict(extra="forbid")
    ids: list[int] = Field(min_length=1, max_length=10000)
    mode: Literal["any", "all"] = "all"
    timeout: float | None = Field(default=None, ge=0, le=7 * 86400)


class NotifyBody(BaseModel):
    """POST /v1/notify: the push path."""

    model_config = ConfigDict(extra="forbid")
    backend: str
    ids: list[str] = Field(max_length=10000)
    info: dict[str, Any] = Field(default_factory=dict)


def _owner() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


def unix_groups(user: str) -> tuple[str, ...]:
    """The Unix groups of a user (primary first), for fairshare and lab membership; () for unknown users."""
    import grp

    try:
        primary = grp.getgrgid(pwd.getpwnam(user).pw_gid).gr_name
    except KeyError:
        return ()
    others = sorted(g.gr_name for g in grp.getgrall() if user in g.gr_mem and g.gr_name != primary)
    return (primary, *others)


def create_app(gw: Gateway) -> FastAPI:
    """The FastAPI app over one gateway; the gateway starts and stops with the app."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await gw.start()
        try:
            yield
        finally:
            await gw.stop()

    app = FastAPI(title="frontdesk", version="0.1.0", lifespan=lifespan)
    gw_section = gw.settings.section("gateway")
    app.add_middleware(Limits, max_body=max_body_from(gw_section), home=str(gw.settings.home))  # 413, 507
    facility = gw.settings.mode == "facility"
    roles = Roles.from_section(gw.settings.section("access"), owner=None if facility else _owner())
    access = Access(roles, gw.publish, lambda sid: _session_owner(gw, sid))
    authn = Authenticator(gw.settings, roles, tokens_from_settings(gw.settings))
    app.state.access = access

    @app.middleware("http")
    async def identify(request: Request, call_next: Any) -> Any:
        # The kernel (SO_PEERCRED) on the Unix socket; a MUNGE credential or a bearer token on TCP.
        try:
            caller = await authn.caller(request.scope, request.headers)
        except Unauthenticated as exc:
            return JSONResponse(exc.to_payload(), exc.http_status)
        request.state.caller = caller
        request.state.principal = caller.user  # plug-ins written before identities read this name
        sid = _SESSION_PATH.match(request.url.path)
        if sid is not None:  # the agents routes answer another user's session with 404: journal the attempt
            owner = _session_owner(gw, sid.group(1))
            if owner is not None and not caller.owns(owner):
                access.deny(caller, f"{request.method} {request.url.path} of", f"session {sid.group(1)}", owner)
        return await call_next(request)

    @app.exception_handler(FrontdeskError)
    async def on_error(request: Request, exc: FrontdeskError) -> JSONResponse:
        caller = getattr(request.state, "caller", None)
        if isinstance(exc, Denied) and not isinstance(exc, Forbidden) and caller is not None:
            if request.url.path.startswith("/v1/memory/"):  # the lesson store's own refusals are audited too
                access.deny(caller, request.method, request.url.path, None)
        return JSONResponse(exc.to_payload(), status_code=exc.http_status)

    @app.exception_handler(RequestValidationError)
    async def on_invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        err = exc.errors()[0] if exc.errors() else {}
        loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
        msg = f"{loc}: {err.get('msg', 'invalid')}" if loc else str(err.get("msg", "invalid request"))
        return JSONResponse({"error": "bad_input", "message": msg}, status_code=400)

    r = APIRouter(prefix="/v1")

    @r.get("/health")
    async def health() -> dict[str, Any]:
        return {
            "ok": True,
            "backend": gw.backend.name,
            "pid": os.getpid(),
            "uptime_s": time.time() - gw.started_at,
            "last_seq": gw.store.last_seq(),
            "plugins": [getattr(p, "name", "?") for p in gw.plugins],
        }

    @r.post("/jobs")
    async def submit(body: SubmitBody, request: Request) -> dict[str, Any]:
        if body.spec is not None and body.spec_text is not None:
            raise UserError("give either 'spec' or 'spec_text', not both")
        if body.spec is not None:
            spec = validate_spec(body.spec)
        elif body.spec_text is not None:
            spec = parse_spec_text(body.spec_text, body.format)
        else:
            raise UserError("a job needs 'spec' or 'spec_text'")
        for dep in spec.depends_on:  # a job may wait only on jobs its submitter may see
            if isinstance(dep, int) or str(dep).isdigit():
                row = gw.store.get(int(dep))
                if row is not None:
                    access.job(request.state.caller, int(dep), _owner_of(row), Action.LIST, "depend on")
        c = body.context
        check_text(c, "context")  # lone surrogates and NUL bytes cannot be stored: 422, not 500
        raw_env = c.get("env")
        env: dict[str, Any] = raw_env if isinstance(raw_env, dict) else {}
        caller: Caller = request.state.caller
        ctx = SubmitContext(
            principal=caller.user,
            uid=caller.uid,
            groups=caller.groups or unix_groups(caller.user),
            session=_str(c.get("session")),
            harness=_str(c.get("harness")),
            cwd=_str(c.get("cwd")),
            source=_str(c.get("source")) or "api",
            env={str(k): str(v) for k, v in env.items()},
            extra={k: v for k, v in c.items() if k not in ("session", "harness", "cwd", "source", "env")},
        )
        result = await gw.submit(spec, ctx)
        if result.get("duplicate") and not (caller.admin or caller.owns(result.get("principal"))):
            # another user's idempotency key: never hand their job record (spec, environment) to this caller
            raise access.deny(caller, "reuse the idempotency key of", f"job {result['id']}", result.get("principal"))
        return result

    @r.get("/jobs")
    async def list_jobs(
        request: Request,
        state: list[str] = Query(default=[]),
        session: str | None = None,
        principal: str | None = None,
        name: str | None = None,
        active: bool = False,
        limit: int = Query(default=200, ge=1, le=100000),
    ) -> list[dict[str, Any]]:
        caller: Caller = request.state.caller
        if not access.may(caller, None, Action.LIST) and not roles.labmates_read_jobs:
            if principal not in (None, caller.user):
                return []  # others' jobs are private: filtered out, as squeue does with PrivateData=jobs
            principal = caller.user
        rows = gw.store.select(
            state=[s.upper() for s in state],
            session=session,
            principal=principal,
            name=name,
            active=active,
            limit=limit,
        )
        return [job_record(r) for r in rows if access.may(caller, _owner_of(r), Action.LIST)]

    @r.get("/queue")
    async def queue(request: Request) -> dict[str, Any]:
        caller: Caller = request.state.caller
        rows = [r for r in gw.store.active() if access.may(caller, _owner_of(r), Action.LIST)]
        return {"jobs": [job_record(r) for r in rows], "inventory": gw.backend.inventory().to_dict()}

    @r.get("/cluster")
    async def cluster(request: Request) -> dict[str, Any]:
        caller: Caller = request.state.caller
        out: dict[str, Any] = {"backend": gw.backend.name, "inventory": gw.backend.inventory().to_dict()}
        for plugin in gw.plugins:
            info = getattr(plugin, "cluster_info", None)
            if info is not None:
                out[plugin.name] = _own_rows(info(), caller, access)
        return out

    def job_for(request: Request, job_id: int, action: Action, verb: str) -> Any:
        row = gw.get_job(job_id)
        access.job(request.state.caller, job_id, _owner_of(row), action, verb)
        return row

    @r.get("/jobs/{job_id}")
    async def get_job(job_id: int, request: Request) -> dict[str, Any]:
        return job_record(job_for(request, job_id, Action.LIST, "see"))

    @r.post("/jobs/{job_id}/cancel")
    async def cancel(job_id: int, request: Request) -> dict[str, Any]:
        job_for(request, job_id, Action.ACT, "cancel")
        return await gw.cancel(job_id)

    @r.get("/jobs/{job_id}/report")
    async def report(job_id: int, request: Request) -> dict[str, Any]:
        job_for(request, job_id, Action.READ, "read the report of")
        rep = gw.report(job_id)
        if rep is None:
            from frontdesk.errors import Conflict

            raise Conflict(f"job {job_id} has not ended yet ({gw.get_job(job_id)['state']})")
        return rep

    @r.get("/jobs/{job_id}/logs")
    async def logs(
        job_id: int,
        request: Request,
        tail: int = Query(default=50, ge=1, le=10000),
        stream: Literal["stdout", "stderr"] = "stdout",
    ) -> dict[str, Any]:
        row = job_for(request, job_id, Action.LOGS, "read the logs of")
        stored = row.stdout_path if stream == "stdout" else row.stderr_path
        path = stored or str(gw.job_dir(job_id, row.attempt) / f"{stream}.log")
        raw = await asyncio.to_thread(read_tail_lines, path, tail)  # N lines whenever the file has them
        lines = [gw.redact(ln) for ln in raw]
        return {"job_id": job_id, "stream": stream, "path": path, "lines": lines}

    @r.post("/wait")
    async def wait(body: WaitBody, request: Request) -> dict[str, Any]:
        for job_id in body.ids:
            job_for(request, job_id, Action.READ, "wait for")
        return await gw.wait(body.ids, body.mode, body.timeout)

    @r.post("/notify")
    async def notify(body: NotifyBody) -> dict[str, Any]:
        changed = await gw.notify(body.backend, body.ids)
        return {"ok": True, "changed": changed}

    @r.get("/events", response_model=None)
    async def events(
        request: Request,
        since: int = Query(default=0, ge=0),
        follow: bool = False,
        job: int | None = None,
        kind: list[str] = Query(default=[]),
    ) -> Any:
        caller: Caller = request.state.caller
        if not follow:
            # A page of the journal, filtered; a page the caller may see none of is skipped, never answered
            # empty (clients page until an empty answer).
            cursor, shown = since, list[dict[str, Any]]()
            while not shown and (found := gw.store.events_since(cursor, job_id=job, kinds=kind)):
                shown = [e.to_dict() for e in found if access.sees_event(caller, e)]
                cursor = found[-1].seq
            return shown
        stream = _stream(gw, since, job, kind, lambda e: access.sees_event(caller, e))
        return StreamingResponse(stream, media_type="text/event-stream")

    app.include_router(r)
    for plugin in gw.plugins:
        router = getattr(plugin, "router", None)
        if router is not None:
            app.include_router(router(), prefix="/v1")
    return app


_SESSION_PATH = re.compile(r"^/v1/sessions/([^/]+)")


def _session_owner(gw: Gateway, sid: str) -> str | None:
    """The user an agent session belongs to (None when unknown or without the agents plug-in)."""
    for plugin in gw.plugins:
        store = getattr(plugin, "store", None) if getattr(plugin, "name", "") == "agents" else None
        session = store.get(sid) if store is not None else None
        if session is not None:
            return str(session.user)
    return None


def _own_rows(info: Any, caller: Caller, access: Access) -> Any:
    """A plug-in's cluster view with other principals' rows (e.g. trial revocations) only where the caller may see."""
    if not isinstance(info, dict):
        return info
    out = dict(info)
    for key, rows in info.items():
        if isinstance(rows, list) and rows and all(isinstance(r, dict) and "principal" in r for r in rows):
            out[key] = [r for r in rows if access.may(caller, _owner_of(r), Action.LIST)]
    return out


def _owner_of(row: Any) -> str | None:
    """The principal owning a stored job (a row or a JobRecord)."""
    owner = row["principal"]
    return None if owner is None else str(owner)


def _str(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None


async def _stream(
    gw: Gateway, since: int, job: int | None, kinds: list[str], visible: Callable[[Event], bool]
) -> AsyncIterator[bytes]:
    """Server-sent events the caller may see: the stored journal after `since`, then live events, each once."""
    queue: asyncio.Queue[Event] = asyncio.Queue()
    unsubscribe = gw.bus.subscribe(queue.put_nowait)
    try:
        last = since
        for event in gw.store.events_since(since, job_id=job, kinds=kinds):
            last = event.seq
            if visible(event):
                yield _sse(event)
        idle = 0.0
        while not gw.closing:  # a stopping gateway ends its streams; clients resume with --since
            try:
                event = await asyncio.wait_for(queue.get(), timeout=1.0)
            except TimeoutError:
                idle += 1.0
                if idle >= 15:
                    idle = 0.0
                    yield b": keep-alive\n\n"
                continue
            idle = 0.0
            if event.seq <= last or (job is not None and event.job_id != job) or (kinds and event.kind not in kinds):
                continue
            if not visible(event):
                last = event.seq
                continue
            last = event.seq
            yield _sse(event)
    finally:
        unsubscribe()


def _sse(event: Event) -> bytes:
    return f"id: {event.seq}\ndata: {json.dumps(event.to_dict(), default=str)}\n\n".encode()
