"""The storage plug-in: POST /v1/fs/{op} runs an operator as the caller; GET /v1/fs/budget shows counters.

Every question is admitted by the caller's metadata budget (user, agent session) and charged with the
metadata operations it really made; an empty budget answers HTTP 429 with Retry-After. Answers are JSON
written with `ensure_ascii` so names that are not UTF-8 travel as `\\udcXX` escapes (see storage.model).
"""

from __future__ import annotations

import json
import math
import pwd
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from fastapi import APIRouter, Request, Response

from frontdesk.config import TableKeys
from frontdesk.errors import ConfigError, Forbidden, RateLimited, UserError, from_payload
from frontdesk.spec.bounds import DuplicateKeyError, loads_unique
from frontdesk.storage.budget import Budget, BudgetConfig
from frontdesk.storage.forward import Forwarder
from frontdesk.storage.ops import MAX_LIMIT
from frontdesk.storage.pool import Identity, Workers

if TYPE_CHECKING:
    from frontdesk.config import Settings
    from frontdesk.identity import Caller

__all__ = ["STORAGE_KEYS", "StoragePlugin"]

_OPS = frozenset({"grep", "find", "head", "tail", "wc", "tree", "du"})
_FIELDS = frozenset({"argv", "cwd", "limit", "cursor", "session"})


def _identity(caller: Caller) -> Identity:
    try:
        pw = pwd.getpwuid(caller.uid) if caller.uid is not None else pwd.getpwnam(caller.user)
    except KeyError:
        raise Forbidden(f"{caller.user} is not a Unix user here: no one to read files as") from None
    return Identity(pw.pw_uid, pw.pw_gid if caller.gid is None else caller.gid, pw.pw_name)


def _question(op: str, raw: bytes) -> tuple[dict[str, object], str]:
    """The validated question and the agent session it is charged to."""
    try:
        body = loads_unique(raw or b"{}")  # the body's one parse refuses a key written twice (api/uniquekeys.py)
    except DuplicateKeyError as exc:
        raise UserError(f"request body: {exc}") from None
    except (ValueError, RecursionError):
        raise UserError("the body is not JSON (or nested too deeply)") from None
    if op not in _OPS:
        raise UserError(f"no operator {op!r}; one of {', '.join(sorted(_OPS))}")
    if not isinstance(body, dict):
        raise UserError("the body must be a JSON object")
    unknown = sorted(set(body) - _FIELDS)
    if unknown:
        raise UserError(f"body: unknown field {unknown[0][:64]!r}; the fields are {', '.join(sorted(_FIELDS))}")
    argv, cwd = body.get("argv", []), body.get("cwd", "/")
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv) or not isinstance(cwd, str):
        raise UserError("body: argv must be a list of strings and cwd a string")
    limit, cursor, session = body.get("limit"), body.get("cursor"), body.get("session") or "-"
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
        raise UserError("body: limit must be an integer")
    if limit is not None and not 1 <= limit <= MAX_LIMIT:  # 0 was read as "the default" further on
        raise UserError(f"--limit must be 1..{MAX_LIMIT}, got {limit}")
    if not isinstance(cursor, str | None) or not isinstance(session, str) or len(session) > 200:
        raise UserError("body: cursor and session must be strings")
    return {"op": op, "argv": argv, "cwd": cwd, "limit": limit, "cursor": cursor}, session


STORAGE_KEYS = TableKeys.of("storage", {*BudgetConfig.__dataclass_fields__, "timeout_s", "inotify", "idle_s"})
"""`[storage]` as StoragePlugin reads it (the budget's fields, the workers'); storage/forward.py reads the rest."""


def _seconds(section: Mapping[str, object], key: str, default: float) -> float:
    value = section.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 86400:
        raise ConfigError(f"[storage] {key} must be a number of seconds (0 < s <= 86400), got {value!r}")
    return float(value)


def _json(data: object, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(json.dumps(data).encode(), status, headers, media_type="application/json")


class StoragePlugin:
    """Operators next to the data, with per-principal metadata budgets."""

    name = "storage"

    def __init__(self, settings: Settings) -> None:
        section = settings.section("storage")
        self.budget = Budget(BudgetConfig.from_section(section))
        self.workers = Workers(
            timeout_s=_seconds(section, "timeout_s", 120.0),
            inotify=section.get("inotify") is not False,
            idle_s=_seconds(section, "idle_s", 600.0),
        )
        self.forward = Forwarder.from_section(section, self.workers.timeout_s)

    async def answer(self, caller: Caller, op: str, raw: bytes) -> Response:
        question, session = _question(op, raw)
        who, principal = _identity(caller), (caller.user, session)
        self.workers.check(who)
        try:
            self.budget.admit(principal, time.monotonic())
        except RateLimited as exc:
            wait = str(math.ceil(float(exc.fields.get("retry_after", 1))))
            return _json(exc.to_payload(), exc.http_status, {"Retry-After": wait})
        route = self.forward.route_of(op, question["argv"], question["cwd"]) if self.forward else None  # type: ignore[arg-type]
        if route is None or self.forward is None:
            answer, where = await self.workers.ask(who, question), "gateway"
        else:  # the operator runs on the node that holds the data; the budget stays here
            answer, where = await self.forward.ask(route, who.user, question), f"agent {route.agent}"
        if "error" in answer:
            raise from_payload(answer)
        stats = answer.get("stats")
        cost = sum(int(v) for k, v in stats.items() if k != "cache_hits") if isinstance(stats, dict) else 0
        self.budget.charge(principal, cost, time.monotonic())
        answer["where"] = where
        return _json(answer)

    def router(self) -> APIRouter:
        router = APIRouter()

        @router.get("/fs/budget")
        async def budget(request: Request) -> Response:
            caller: Caller = request.state.caller
            rows = self.budget.counters(time.monotonic())
            return _json({"principals": [r for r in rows if caller.admin or r["user"] == caller.user]})

        @router.post("/fs/{op}")
        async def run_op(op: str, request: Request) -> Response:
            return await self.answer(request.state.caller, op, await request.body())

        return router

    async def stop(self) -> None:
        await self.workers.close()
