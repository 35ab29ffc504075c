"""A JSON request body is parsed once, where it is consumed, and refused if it writes a key twice at any depth.

Python's json (and so Starlette's `Request.json()` and FastAPI's body parsing) keeps the last of a repeated key
silently: `{"spec": {"command": [..], "command": [..]}}` would run the second command. Spec text already refuses
a repeated key (`spec.bounds.unique_keys`); every JSON body the gateway reads does the same, in the one parse
that reads it (`parse`, through `spec.bounds.loads_unique`):
- the fast routes (`api/fastsubmit.py`, `api/fastwait.py`) parse their bodies with it;
- every FastAPI route is a `UniqueKeysRoute`: its request's `json()` is `parse`. `checked(router)` makes each
  route of a router one (the app's, the built-in plug-ins' and a site plug-in's), before the app includes it;
- a route that reads its raw body parses it with `spec.bounds.loads_unique` (storage's `/v1/fs/{op}`).
The answer is the app's one-line `bad_input` (400): `request body: duplicate key 'NAME'`; nothing is stored.
A body that does not parse is the route's to refuse, as before; a route that takes no body never parses one.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import APIRouter
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from frontdesk.errors import UserError
from frontdesk.spec.bounds import DuplicateKeyError, loads_unique

__all__ = ["DuplicateKey", "UniqueKeysRoute", "checked", "parse"]

Handler = Callable[[Request], Coroutine[Any, Any, Response]]


class DuplicateKey(UserError):
    """A JSON request body writes a key twice (400 bad_input)."""


def parse(body: bytes) -> Any:
    """The body's JSON value; `DuplicateKey` for a repeated key; json's own errors for anything else."""
    try:
        return loads_unique(body)
    except DuplicateKeyError as exc:
        raise DuplicateKey(f"request body: {exc}") from None


_UNPARSED: Any = object()


class _UniqueKeysRequest(Request):
    """A request whose `json()` refuses a repeated key (FastAPI parses a JSON body through `json()`)."""

    _parsed: Any = _UNPARSED

    async def json(self) -> Any:
        if self._parsed is _UNPARSED:
            self._parsed = parse(await self.body())
        return self._parsed


class UniqueKeysRoute(APIRoute):
    """A FastAPI route whose JSON body is parsed once, refusing a repeated key with the app's one-line 400."""

    def get_route_handler(self) -> Handler:
        handler = super().get_route_handler()

        async def checked_handler(request: Request) -> Response:
            try:
                return await handler(_UniqueKeysRequest(request.scope, request.receive))
            except HTTPException as exc:  # FastAPI wraps what the body's parse raised in a generic 400
                if isinstance(exc.__cause__, DuplicateKey):
                    raise exc.__cause__ from None  # the app's FrontdeskError answer
                raise

        return checked_handler


_CHECKED: dict[type[APIRoute], type[APIRoute]] = {APIRoute: UniqueKeysRoute}
"""A route class and its checked subclass (one each, made once)."""


def _checked_class(kind: type[APIRoute]) -> type[APIRoute]:
    if kind not in _CHECKED:
        _CHECKED[kind] = type(f"UniqueKeys{kind.__name__}", (UniqueKeysRoute, kind), {})
    return _CHECKED[kind]


def checked(router: APIRouter) -> APIRouter:
    """`router` with every route (those of routers it includes too) a `UniqueKeysRoute`; before it is included.

    A plug-in's router is built by its own code, which imports nothing from the edge; a route of another class
    (a site's own `APIRoute` subclass) keeps it, with the check in front."""
    for route in router.routes:
        if isinstance(route, APIRoute) and not isinstance(route, UniqueKeysRoute):
            route.__class__ = _checked_class(type(route))  # no state of its own: the handler is built later
        inner = getattr(route, "original_router", None)  # FastAPI >= 0.150 keeps an included router as is
        if isinstance(inner, APIRouter):
            checked(inner)
    return router
