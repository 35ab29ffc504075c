"""POST /v1/wait without FastAPI's routing: the long-poll that a job's end answers, as a plain ASGI layer.

Like `api/fastsubmit.py` (the model), it sits inside `Limits` and `Identify` (body cap, authentication and peer
credentials: unchanged) and takes only a well-formed request: a JSON object (`Content-Type: application/json`)
that `WaitBody` accepts. Anything else goes on to the full route with its body replayed, so every refusal of a
malformed body is FastAPI's own answer. A request taken here runs the route's own code (`api.jobs.wait_for`,
which also builds the answer), and a `FrontdeskError` is answered by the app's one error handler.

At a job's end this leaves the answer's way out without FastAPI's routing, dependency and exception layers
(and the request's way in: the parse and the checks before the long-poll parks, off the CPU the other
parked clients' ends need). `tests/integration/test_fast_wait.py` compares both routes byte for byte.
"""

from __future__ import annotations

import json

from pydantic import ValidationError
from starlette.responses import Response

from frontdesk.api.access import Access
from frontdesk.api.fastsubmit import ErrorAnswer, read_body, replay
from frontdesk.api.jobs import WaitBody, wait_for
from frontdesk.api.limits import ASGIApp, Receive, Scope, Send
from frontdesk.errors import FrontdeskError
from frontdesk.gateway import Gateway
from frontdesk.identity import Caller

__all__ = ["FastWait"]


class FastWait:
    """Answers a well-formed `POST /v1/wait` itself; passes everything else on unchanged."""

    def __init__(self, app: ASGIApp, gw: Gateway, access: Access, on_error: ErrorAnswer) -> None:
        self.app = app
        self.gw = gw
        self.access = access
        self.on_error = on_error

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != "/v1/wait" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        messages, body = await read_body(receive)
        parsed = _parsed(scope, body) if body is not None else None
        if parsed is None:  # not ours to judge: the full route answers it, body replayed
            await self.app(scope, replay(messages, receive), send)
            return
        caller: Caller = scope["state"]["caller"]  # Identify ran: no caller, no request
        answer: Response
        try:
            answer = await wait_for(self.gw, self.access, caller, parsed)
        except FrontdeskError as exc:
            answer = self.on_error(self.access, caller, "POST", scope["path"], exc)
        await answer(scope, receive, send)


def _parsed(scope: Scope, body: bytes) -> WaitBody | None:
    """The body as the full route would validate it, or None when the full route must answer."""
    kinds = [v for k, v in scope["headers"] if k == b"content-type"]
    if kinds != [b"application/json"] or not body:
        return None
    try:
        data = json.loads(body)  # as starlette's Request.json()
    except Exception:  # not JSON, or nested past the recursion limit: the full route says which
        return None
    if not isinstance(data, dict):
        return None
    try:
        return WaitBody.model_validate(data, from_attributes=True)  # as FastAPI validates a body field
    except (ValidationError, RecursionError):
        return None
