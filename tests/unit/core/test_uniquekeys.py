"""api/uniquekeys.py: a JSON body's one parse refuses a repeated key; `checked(router)` reaches a route of a site's own
class (kept, the check in front) and a router included in another. The gateway's own routes are walked for real in
tests/integration/test_body_routes_walk.py; this covers the shapes no built-in router has."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.responses import Response

from frontdesk.api.uniquekeys import DuplicateKey, UniqueKeysRoute, checked, parse
from frontdesk.errors import FrontdeskError


class Tagged(APIRoute):
    """A site's own route class: every answer carries a header."""

    def get_route_handler(self) -> Any:
        handler = super().get_route_handler()

        async def tagged(request: Request) -> Response:
            answer: Response = await handler(request)
            answer.headers["x-site"] = "yes"
            return answer

        return tagged


def _app() -> FastAPI:
    site = APIRouter(route_class=Tagged)

    @site.post("/site")
    async def site_route(body: dict[str, Any]) -> dict[str, Any]:
        return {"keys": sorted(body)}

    inner = APIRouter()

    @inner.post("/inner")
    async def inner_route(request: Request) -> dict[str, Any]:
        return {"keys": sorted(await request.json())}

    outer = APIRouter()
    outer.include_router(inner, prefix="/outer")
    app = FastAPI()

    async def on_error(request: Request, exc: Exception) -> JSONResponse:  # as api/app.py answers one
        assert isinstance(exc, FrontdeskError)
        return JSONResponse(exc.to_payload(), status_code=exc.http_status)

    app.add_exception_handler(FrontdeskError, on_error)
    app.include_router(checked(site))
    app.include_router(checked(outer))
    return app


def _post(app: FastAPI, path: str, body: bytes) -> tuple[int, dict[str, str], Any]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": path, "raw_path": path.encode(), "query_string": b"",
             "headers": [(b"content-type", b"application/json")], "scheme": "http", "server": ("x", 80),
             "client": ("y", 1), "root_path": "", "http_version": "1.1", "asgi": {"version": "3.0"}}  # fmt: skip
    asyncio.run(app(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    headers = {k.decode(): v.decode() for k, v in start["headers"]}
    return start["status"], headers, json.loads(b"".join(m.get("body", b"") for m in sent[1:]))


@pytest.mark.parametrize("path", ["/site", "/outer/inner"])
def test_a_repeated_key_is_refused_on_a_site_class_and_a_nested_router(path: str) -> None:
    app = _app()
    status, _, answer = _post(app, path, b'{"a": {"b": [{"k": 1, "k": 2}]}}')
    assert (status, answer) == (400, {"error": "bad_input", "message": "request body: duplicate key 'k'"})
    status, headers, answer = _post(app, path, b'{"a": {"b": [{"k": 1}]}, "c": 2}')
    assert (status, answer) == (200, {"keys": ["a", "c"]})
    assert headers.get("x-site") == ("yes" if path == "/site" else None)  # the site's class still runs


def test_checked_keeps_the_class_underneath() -> None:
    site = APIRouter(route_class=Tagged)

    @site.post("/x")
    async def x(body: dict[str, Any]) -> dict[str, Any]:
        return body

    route = checked(checked(site)).routes[0]  # twice: the same class, not wrapped again
    assert isinstance(route, UniqueKeysRoute) and isinstance(route, Tagged)
    assert type(route).__mro__.count(UniqueKeysRoute) == 1


def test_parse() -> None:
    assert parse(b'{"a": [{"k": 1}, {"k": 2}], "b": {"k": 3}}') == {"a": [{"k": 1}, {"k": 2}], "b": {"k": 3}}
    with pytest.raises(DuplicateKey, match=r"^request body: duplicate key 'k'$"):
        parse(b'[[{"x": {"k": 1, "k": 1}}]]')
    with pytest.raises(ValueError) as info:  # not JSON: json's own error, for the route to answer as before
        parse(b'{"k": 1,')
    assert not isinstance(info.value, DuplicateKey)
    with pytest.raises(DuplicateKey, match="'" + "x" * 80 + "'$"):  # the name cut at 80, one line
        parse(('{"' + "x" * 500 + '": 1, "' + "x" * 500 + '": 2}').encode())
