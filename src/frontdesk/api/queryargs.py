"""Query parameters a route does not take are bad input (400, one line), not ignored: `GET /v1/jobs?stat=FAILED`
listed every job, as if no filter had been asked for.

An app-wide dependency: after routing, the request's route is known (`scope["route"]`), and the names it declares
(FastAPI's dependant, nested dependencies included) are compared with the query's. Requests without a query
string (the hot paths) cost one dictionary look-up.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl

from fastapi import Request

from frontdesk.errors import UserError

__all__ = ["known_query"]

_DECLARED: dict[Any, frozenset[str]] = {}


async def known_query(request: Request) -> None:
    """Refuse query parameters the matched route does not declare (a FastAPI dependency)."""
    raw = request.scope.get("query_string")
    route = request.scope.get("route")
    if not raw or route is None or getattr(route, "dependant", None) is None:
        return
    key = route.dependant.call
    known = _DECLARED.get(key)
    if known is None:
        known = _DECLARED[key] = _declared(route.dependant)
    unknown = sorted({k for k, _ in parse_qsl(raw.decode("latin-1"), keep_blank_values=True)} - known)
    if unknown:
        names = ", ".join(repr(n[:60]) for n in unknown[:3])
        where = f"{request.method} {request.url.path}"[:200]
        known_text = ", ".join(sorted(known)) or "none"
        raise UserError(f"unknown query parameter {names} for {where} (it takes: {known_text})")


def _declared(dependant: Any) -> frozenset[str]:
    names: set[str] = set()
    stack = [dependant]
    while stack:
        d = stack.pop()
        names.update(p.alias for p in d.query_params)
        stack.extend(d.dependencies)
    return frozenset(names)
