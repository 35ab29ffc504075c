"""`/v1/memory/...`: lessons for the CLI, read and written as the request's principal only."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from frontdesk.errors import GatewayUnavailable, NotFound, UserError
from frontdesk.jobs.ids import Id
from frontdesk.memory.advice import advise
from frontdesk.memory.classify import classify, load_catalog
from frontdesk.memory.lesson import Lesson
from frontdesk.memory.store import LessonStore

if TYPE_CHECKING:
    from frontdesk.memory.plugin import MemoryPlugin

__all__ = ["build_router"]


class PromoteBody(BaseModel):
    """POST /v1/memory/lessons/{id}/promote."""

    model_config = ConfigDict(extra="forbid")
    scope: Literal["project", "lab", "cluster"]
    name: str | None = Field(default=None, max_length=200)


class AddBody(BaseModel):
    """POST /v1/memory/lessons: a lesson typed in by a person or an agent."""

    model_config = ConfigDict(extra="forbid")
    kind: str = Field(max_length=40)
    cause: str = Field(min_length=1, max_length=300)
    template: str = Field(default="", max_length=2000)
    application: str = Field(default="", max_length=100)
    fix: str = Field(default="", max_length=500)
    source: Literal["person", "agent"] = "person"
    state: str | None = Field(default=None, max_length=40)


class ClassifyBody(BaseModel):
    """POST /v1/memory/classify."""

    model_config = ConfigDict(extra="forbid")
    text: str = Field(max_length=4_000_000)
    state: str | None = None
    exit_code: int | None = None


def _split(command: str) -> list[str]:
    import shlex

    try:
        return shlex.split(command)
    except ValueError:
        raise UserError(f"cannot split the command {command[:80]!r}: unbalanced quotes") from None


def _principal(request: Request) -> str:
    return str(request.state.principal)


def _owner(lesson: Lesson) -> str:
    """Whose a lesson is, for the audit trail: the user, else `scope:name`."""
    return lesson.scope_name if lesson.scope == "user" else f"{lesson.scope}:{lesson.scope_name}"


def _hidden(store: LessonStore, lesson_id: int, request: Request, verb: str) -> Lesson:
    """A lesson outside the caller's scopes: an admin may read it (journalled `access.admin`); anyone else gets
    404 as if there were none (no hint it exists) and an `access.denied` event. NotFound either way otherwise."""
    row = store.conn.execute("SELECT * FROM memory_lessons WHERE id=?", (lesson_id,)).fetchone()
    access, caller = getattr(request.app.state, "access", None), getattr(request.state, "caller", None)
    if row is None or access is None or caller is None:
        raise NotFound(f"no lesson {lesson_id}")
    lesson = Lesson.from_row(row)
    if caller.admin and verb == "read":
        access.audit(caller, verb, f"lesson {lesson_id}", _owner(lesson))
        return lesson
    access.deny(caller, verb, f"lesson {lesson_id}", _owner(lesson))
    raise NotFound(f"no lesson {lesson_id}")


def build_router(plugin: MemoryPlugin) -> APIRouter:
    """The router over one MemoryPlugin (mounted under /v1 by the API)."""
    r = APIRouter()

    def store() -> LessonStore:
        if plugin.store is None:
            raise GatewayUnavailable("the memory store is not attached yet")
        result: LessonStore = plugin.store
        return result

    @r.get("/memory/search")
    async def search(
        request: Request,
        q: str = "",
        limit: int = Query(default=20, ge=1, le=500),
        all: bool = False,
        state: str | None = Query(default=None, max_length=40),
        kind: str | None = Query(default=None, max_length=40),
        command: str | None = Query(default=None, max_length=4000),
    ) -> dict[str, Any]:
        if kind is not None and kind not in load_catalog().kinds:
            raise UserError(f"unknown kind {kind!r} (one of {', '.join(sorted(load_catalog().kinds))})")
        template = plugin._context({"command": _split(command)}, None, None, None).template if command else None
        found = store().search(
            q, _principal(request), limit=limit, include_invalid=all, state=state, kind=kind, template=template
        )
        return {"query": q, "template": template, "lessons": [lesson.to_dict() for lesson in found]}

    @r.post("/memory/lessons")
    async def add(body: AddBody, request: Request) -> dict[str, Any]:
        return (
            store()
            .add(
                _principal(request),
                body.kind,
                body.cause,
                template=body.template,
                application=body.application,
                fix_text=body.fix,
                source=body.source,
                state=body.state,
            )
            .to_dict()
        )

    _lesson_routes(r, store)

    @r.get("/memory/advice")
    async def advice(request: Request, template: str | None = None) -> dict[str, Any]:
        runs = store().runs(_principal(request), template)
        return {"principal": _principal(request), "advice": advise(runs)}

    @r.post("/memory/classify")
    async def classify_text(body: ClassifyBody) -> dict[str, Any]:
        return classify(body.text, body.state, body.exit_code).to_dict()

    return r


def _lesson_routes(r: APIRouter, store: Callable[[], LessonStore]) -> None:
    """One lesson: show, promote, forget (a lesson the caller may not see is journalled, then NotFound)."""

    @r.get("/memory/lessons/{lesson_id}")
    async def show(lesson_id: Id, request: Request) -> dict[str, Any]:
        try:
            return store().get(lesson_id, _principal(request)).to_dict()
        except NotFound:
            return _hidden(store(), lesson_id, request, "read").to_dict()

    @r.post("/memory/lessons/{lesson_id}/promote")
    async def promote(lesson_id: Id, body: PromoteBody, request: Request) -> dict[str, Any]:
        caller = getattr(request.state, "caller", None)
        admin = bool(getattr(caller, "admin", False))
        try:
            mine = store().get(lesson_id, _principal(request))
        except NotFound:
            mine = None
        try:
            lesson = store().promote(lesson_id, _principal(request), body.scope, body.name, admin=admin)
        except NotFound:
            _hidden(store(), lesson_id, request, "promote")  # journals the attempt; raises NotFound
            raise
        if caller is not None and admin and mine is None:  # an admin promoting a lesson outside their scopes
            origin = Lesson.from_row(store()._lesson_row(lesson_id))
            request.app.state.access.audit(caller, "promote", f"lesson {lesson_id}", _owner(origin))
        return lesson.to_dict()

    @r.delete("/memory/lessons/{lesson_id}")
    async def forget(lesson_id: Id, request: Request) -> dict[str, Any]:
        caller = getattr(request.state, "caller", None)
        try:
            lesson = store().forget(lesson_id, _principal(request), admin=bool(getattr(caller, "admin", False)))
        except NotFound:
            _hidden(store(), lesson_id, request, "forget")  # journals the attempt; raises NotFound
            raise
        if caller is not None:  # an admin forgetting another's lesson leaves a trace
            request.app.state.access.audit(caller, "forget", f"lesson {lesson_id}", _owner(lesson))
        return {"forgotten": lesson.id, "scope": lesson.scope, "signature": lesson.signature}
