"""The gateway's HTTP API (FastAPI): the app, who is calling, errors mapped in one place.

Routes live in api/jobs.py and api/events.py (plug-ins add their own); each reads `request.app.state.gw`
and `.access`, and the caller from `request.state.caller` (set here for every request: api/auth.py).
"""

from __future__ import annotations

import os
import pwd
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from frontdesk.api import events, jobs, tokens
from frontdesk.api.access import Access
from frontdesk.api.auth import Authenticator, tokens_from_settings
from frontdesk.api.authfail import AuthFailures
from frontdesk.api.facility import router as facility_router
from frontdesk.api.fastsubmit import FastSubmit
from frontdesk.api.fastwait import FastWait
from frontdesk.api.identify import Identify
from frontdesk.api.limits import Limits, max_body_from
from frontdesk.api.queryargs import known_query
from frontdesk.api.uniquekeys import checked
from frontdesk.errors import Forbidden, FrontdeskError
from frontdesk.gateway import Gateway
from frontdesk.identity import Caller, Roles
from frontdesk.telemetry.routes import router as metrics_router

__all__ = ["create_app"]


def _owner() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


def error_answer(access: Access, caller: Caller | None, method: str, path: str, exc: FrontdeskError) -> JSONResponse:
    """The one answer to a FrontdeskError (the app's handler and the fast submit route)."""
    if isinstance(exc, Forbidden) and not exc.journalled and caller is not None:
        access.deny(caller, method, path, None)  # a plug-in's own refusal
    return JSONResponse(exc.to_payload(), status_code=exc.http_status)


def _errors(app: FastAPI, access: Access) -> None:
    @app.exception_handler(FrontdeskError)
    async def on_error(request: Request, exc: FrontdeskError) -> JSONResponse:
        caller = getattr(request.state, "caller", None)
        return error_answer(access, caller, request.method, request.url.path, exc)

    @app.exception_handler(StarletteHTTPException)
    async def on_http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        """What the framework refuses before a route runs (no route, wrong method, a body that does not parse)."""
        code = "not_found" if exc.status_code == 404 else "bad_input" if exc.status_code < 500 else "error"
        text = f"no such endpoint: {request.method} {request.url.path}" if exc.status_code == 404 else str(exc.detail)
        message = " ".join(text.split())[:300]
        return JSONResponse({"error": code, "message": message}, status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def on_invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        err = exc.errors()[0] if exc.errors() else {}
        loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
        msg = f"{loc}: {err.get('msg', 'invalid')}" if loc else str(err.get("msg", "invalid request"))
        return JSONResponse({"error": "bad_input", "message": msg}, status_code=400)


_NO_TELEMETRY: Any = {"tracing": False, "metrics": False, "logs": False}
"""FastAPI's native OpenTelemetry off (older FastAPI keeps an unknown keyword in `app.extra`)."""


def create_app(gw: Gateway) -> FastAPI:
    """The FastAPI app over one gateway; the gateway starts and stops with the app."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await gw.start()
        try:
            yield
        finally:
            failures.flush()  # failed authentications counted but not yet journalled
            await gw.stop()

    # FastAPI >= 0.165 asks OpenTelemetry's providers on every request unless its telemetry is off (8 us)
    app = FastAPI(  # a query parameter a route does not take is a 400 (api/queryargs.py)
        title="frontdesk",
        version="0.1.0",
        lifespan=lifespan,
        telemetry=_NO_TELEMETRY,
        dependencies=[Depends(known_query)],
    )
    gw_section = gw.settings.section("gateway")
    facility = gw.settings.mode == "facility"
    roles = Roles.from_section(gw.settings.section("access"), owner=None if facility else _owner())
    access = Access(roles, gw.publish)
    if gw_section.get("fast_submit", True) is not False:  # innermost: inside the limits and the caller's identity
        app.add_middleware(FastSubmit, gw=gw, access=access, on_error=error_answer)
    if gw_section.get("fast_wait", True) is not False:  # the long-poll a job's end answers (api/fastwait.py)
        app.add_middleware(FastWait, gw=gw, access=access, on_error=error_answer)
    app.add_middleware(Limits, max_body=max_body_from(gw_section), home=str(gw.settings.home))  # 413, 507
    app.state.gw, app.state.access = gw, access
    authn = Authenticator(gw.settings, access.roles, tokens_from_settings(gw.settings))
    failures = AuthFailures.from_section(gw.settings.section("access"), gw.publish)
    app.add_middleware(
        Identify,
        authn=authn,
        access=access,
        failures=failures,
        max_body=max_body_from(gw_section),  # a MUNGE request's body is read here, to check its credential
    )
    _errors(app, access)
    # every route's JSON body is parsed once, refusing a key written twice (api/uniquekeys.py): plug-ins' too
    app.include_router(checked(jobs.router))
    app.include_router(checked(events.router))
    app.include_router(checked(tokens.router))  # /v1/tokens: admins make, list and revoke bearer tokens
    app.include_router(checked(facility_router))  # /v1/facility/slurm-events: users' gateways subscribe to Slurm ends
    app.include_router(checked(metrics_router))  # GET /metrics (frontdesk.telemetry)
    for plugin in gw.plugins:
        router = getattr(plugin, "router", None)
        if router is not None:
            app.include_router(checked(router()), prefix="/v1")
    return app
