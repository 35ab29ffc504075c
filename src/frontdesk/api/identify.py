"""The middleware that puts the Caller on every request.

A pure ASGI middleware: starlette's BaseHTTPMiddleware (`@app.middleware("http")`) runs each request in a
task group with memory streams between the layers, which cost a fifth of a submission's time in the gateway.
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.responses import JSONResponse

from frontdesk.api.access import Access
from frontdesk.api.auth import Authenticator, Unauthenticated
from frontdesk.api.authfail import AuthFailures
from frontdesk.api.limits import DEFAULT_MAX_BODY, ASGIApp, Message, Receive, Scope, Send

__all__ = ["Identify"]


class Identify:
    """Sets `request.state.caller` (and `.principal`) from the kernel, MUNGE or a bearer token; 401 otherwise."""

    def __init__(
        self,
        app: ASGIApp,
        authn: Authenticator,
        access: Access,
        failures: AuthFailures | None = None,
        max_body: int = DEFAULT_MAX_BODY,
    ) -> None:
        self.app = app
        self.max_body = max_body
        self.failures = failures
        self.authn = authn
        self.access = access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # The kernel (SO_PEERCRED) on the Unix socket; a MUNGE credential or a bearer token on TCP.
        headers = Headers(scope=scope)
        body = b""
        if self.authn.wants_body(scope, headers):  # a MUNGE credential names its request's body: read it first
            body, receive = await _buffered(receive, self.max_body)
            if len(body) > self.max_body:
                await JSONResponse(
                    {"error": "too_large", "message": f"request body over the limit of {self.max_body} bytes"}, 413
                )(scope, receive, send)
                return
        try:
            caller = await self.authn.caller(scope, headers, body)
        except Unauthenticated as exc:
            if self.failures is not None:  # journalled, at most one event per source per interval
                self.failures.record(scope, headers)
            await JSONResponse(exc.to_payload(), exc.http_status)(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        state["caller"] = caller
        state["principal"] = caller.user  # plug-ins written before identities read this name
        await self.app(scope, receive, send)


async def _buffered(receive: Receive, cap: int) -> tuple[bytes, Receive]:
    """The request's body (reading stops past `cap` bytes) and a `receive` that hands it to the app again."""
    parts: list[bytes] = []
    seen, more = 0, True
    while more and seen <= cap:
        message = await receive()
        if message["type"] != "http.request":
            break
        parts.append(message.get("body", b""))
        seen += len(parts[-1])
        more = bool(message.get("more_body", False))
    body = b"".join(parts)
    replayed = False

    async def again() -> Message:
        nonlocal replayed
        if replayed:
            return await receive()
        replayed = True
        return {"type": "http.request", "body": body, "more_body": False}

    return body, again
