"""POST /v1/jobs without FastAPI's routing: the submission hot path as a plain ASGI layer.

FastAPI's request handling (routing over every route, dependency solving, body validation, response
validation) cost about a third of a submission's CPU in the gateway. This layer sits inside `Limits` and
`Identify` (body cap, 413/422/507, authentication and peer credentials: unchanged) and answers only a
well-formed request: a JSON object (`Content-Type: application/json`) that `SubmitBody` accepts. Anything
else goes on to the full route with its body replayed, so every refusal of a malformed body is FastAPI's own
answer, byte for byte; a key written twice is refused here, by the body's one parse (`api.uniquekeys.parse`, as
the full route's). A request taken here runs the route's own code (`api.jobs.accept`); its answer is serialized
as FastAPI serializes the route's `dict[str, Any]` (pydantic's `dump_json`) and a `FrontdeskError` (a repeated
key too) is answered by the app's one error handler. `tests/integration/test_fast_submit.py` compares both routes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError
from starlette.responses import Response

from frontdesk.api.access import Access
from frontdesk.api.jobs import SubmitBody, accept
from frontdesk.api.limits import ASGIApp, Message, Receive, Scope, Send
from frontdesk.api.uniquekeys import DuplicateKey, parse
from frontdesk.errors import FrontdeskError
from frontdesk.gateway import Gateway
from frontdesk.identity import Caller

__all__ = ["ErrorAnswer", "FastRoute", "FastSubmit", "parsed_body", "read_body", "replay"]

ErrorAnswer = Callable[[Access, Caller | None, str, str, FrontdeskError], Response]
"""The app's answer to a FrontdeskError: (access, caller, method, path, error) -> response."""

B = TypeVar("B", bound=BaseModel)

_ANSWER: TypeAdapter[dict[str, Any]] = TypeAdapter(dict[str, Any])
"""The route's return type, as FastAPI serializes it (its response field's `dump_json`)."""


class FastRoute(ABC, Generic[B]):
    """Answers a well-formed `POST path` itself (`answer`); passes everything else on unchanged.

    Well-formed: a JSON object (`Content-Type: application/json`) that `body` accepts as FastAPI would; the
    full route answers anything else, its body replayed. A `FrontdeskError` gets the app's one error answer.
    """

    path: str
    body: type[B]

    def __init__(self, app: ASGIApp, gw: Gateway, access: Access, on_error: ErrorAnswer) -> None:
        self.app = app
        self.gw = gw
        self.access = access
        self.on_error = on_error

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != self.path or scope["method"] != "POST" or scope["query_string"]:
            await self.app(scope, receive, send)  # a query string: the full route judges it (api/queryargs.py)
            return
        messages, body = await read_body(receive)
        try:
            parsed = parsed_body(scope, body, self.body) if body is not None else None
        except DuplicateKey as exc:  # the body's one parse refused it (api/uniquekeys.py)
            await self.on_error(self.access, scope["state"]["caller"], "POST", scope["path"], exc)(scope, receive, send)
            return
        if parsed is None:  # not ours to judge: the full route answers it, body replayed
            await self.app(scope, replay(messages, receive), send)
            return
        caller: Caller = scope["state"]["caller"]  # Identify ran: no caller, no request
        answer: Response
        try:
            answer = await self.answer(caller, parsed)
        except FrontdeskError as exc:
            answer = self.on_error(self.access, caller, "POST", scope["path"], exc)
        await answer(scope, receive, send)

    @abstractmethod
    async def answer(self, caller: Caller, parsed: B) -> Response:
        """The route's own answer to a well-formed request (each route's code)."""


class FastSubmit(FastRoute[SubmitBody]):
    """Answers a well-formed `POST /v1/jobs` itself; passes everything else on unchanged."""

    path = "/v1/jobs"
    body = SubmitBody

    async def answer(self, caller: Caller, parsed: SubmitBody) -> Response:
        result = await accept(self.gw, self.access, caller, parsed)
        return Response(_ANSWER.dump_json(result), media_type="application/json")


async def read_body(receive: Receive) -> tuple[list[Message], bytes | None]:
    """Every message of the request body, and the body (None when something else came, e.g. a disconnect)."""
    messages: list[Message] = []
    chunks: list[bytes] = []
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return messages, None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return messages, b"".join(chunks)


def parsed_body(scope: Scope, body: bytes, model: type[B]) -> B | None:
    """The body as the full route would validate it, or None when the full route must answer.

    Parsed once, as the full route's `Request.json()` parses it (`api.uniquekeys.parse`): `DuplicateKey` for a
    key written twice."""
    kinds = [v for k, v in scope["headers"] if k == b"content-type"]
    if kinds != [b"application/json"] or not body:
        return None
    try:
        data = parse(body)
    except DuplicateKey:
        raise
    except Exception:  # not JSON, or nested past the recursion limit: the full route says which
        return None
    if not isinstance(data, dict):
        return None
    try:
        return model.model_validate(data, from_attributes=True)  # as FastAPI validates a body field
    except (ValidationError, RecursionError):
        return None


def replay(messages: list[Message], receive: Receive) -> Receive:
    """A `receive` that hands back the messages already read, then reads on (a disconnect, later)."""
    pending = list(messages)

    async def again() -> Message:
        return pending.pop(0) if pending else await receive()

    return again
