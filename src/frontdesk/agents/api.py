"""`/v1/sessions` routes: register, list, unread, ack, read, turn state, and the hooks' long-poll.

Every route acts for the request's principal: a path's session id names the caller's own session (sessions
are keyed by (user, id), so another user's same id is another session, out of reach; root may list all).
Bodies are small pydantic models; errors are frontdesk errors. What each call does is the delivery
service's (service.py); the routes parse, look up the caller's session and call it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field

from frontdesk.agents.model import Session, TurnState
from frontdesk.agents.service import DeliveryService, HookCall
from frontdesk.jobs.ids import Id

__all__ = ["build_router"]

_ID = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_.:@+-]+$")


class RegisterBody(BaseModel):
    """POST /v1/sessions."""

    model_config = ConfigDict(extra="forbid")
    session: str = _ID
    harness: str | None = Field(default=None, max_length=40)
    cwd: str | None = Field(default=None, max_length=4096)
    reach: dict[str, Any] = Field(default_factory=dict)


class HookBody(BaseModel):
    """POST /v1/sessions/{id}/hook: one call per hook run (register + turn state + reports)."""

    model_config = ConfigDict(extra="forbid")
    event: Literal[
        "SessionStart", "UserPromptSubmit", "Stop", "SubagentStop", "SessionEnd", "rewake", "notify", "PostToolUse"
    ]
    harness: str | None = Field(default=None, max_length=40)
    cwd: str | None = Field(default=None, max_length=4096)
    reach: dict[str, Any] = Field(default_factory=dict)
    stop_hook_active: bool = False
    budget: float = Field(default=600.0, ge=0, le=7 * 86400)
    plan: list[PlanStepBody] | None = Field(default=None, max_length=50)
    plan_source: Literal["TodoWrite", "update_plan"] | None = None
    prompt_id: str | None = Field(default=None, min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_.:@+-]+$")
    """The harness's id of the turn (Claude Code's prompt_id, Codex's turn_id): turns survive a lost hook."""


class PlanStepBody(BaseModel):
    """One step of the agent's plan, as the hook read it from the transcript."""

    model_config = ConfigDict(extra="forbid")
    text: str = Field(max_length=300)
    status: str = Field(default="pending", max_length=20)


class ResumeBody(BaseModel):
    """POST /v1/sessions/{id}/campaign/resume: the plan (`commit`: recorded, reports handed over)."""

    model_config = ConfigDict(extra="forbid")
    dir: str | None = Field(default=None, min_length=1, max_length=4096)
    headless: bool = False
    harness_args: list[str] = Field(default_factory=list, max_length=50)
    commit: bool = False


class AckBody(BaseModel):
    """POST /v1/sessions/{id}/ack: the jobs whose reports the hook handed to the harness."""

    model_config = ConfigDict(extra="forbid")
    jobs: list[Id] = Field(default_factory=list, max_length=10000)
    upto: int | None = None
    channel: str = Field(default="hooks", max_length=40)


class ReadBody(BaseModel):
    """POST /v1/sessions/{id}/read: reports the session read itself (wait, report, MCP)."""

    model_config = ConfigDict(extra="forbid")
    jobs: list[Id] = Field(min_length=1, max_length=10000)
    via: Literal["wait", "report", "run", "mcp-wait", "mcp-report"] = "report"


class TurnBody(BaseModel):
    """POST /v1/sessions/{id}/turn."""

    model_config = ConfigDict(extra="forbid")
    state: TurnState


def _principal(request: Request) -> str:
    return str(getattr(request.state, "principal", None) or "unknown")


def _admin(request: Request) -> bool:
    """Whether the caller holds the site's admin role (identity.Roles: [access].admins / admins_group)."""
    return bool(getattr(getattr(request.state, "caller", None), "admin", False))


def build_router(plugin: DeliveryService) -> APIRouter:
    """The routes, bound to one plug-in instance: each parses, checks the owner and calls the service."""
    r = APIRouter(prefix="/sessions", tags=["sessions"])

    def owned(sid: str, request: Request, user: str | None = None, read: bool = False) -> Session:
        """The caller's own session of that id (root or an admin may name another user's: `?user=`; a read, a GET
        or `read`, without it takes the one user's holding that id)."""
        read = read or request.method == "GET"
        return plugin.attached().owned(_principal(request), sid, user, _admin(request), read)

    @r.post("")
    async def register(body: RegisterBody, request: Request) -> dict[str, Any]:
        plugin.attached()
        s = plugin.register(_principal(request), body.session, body.harness, body.cwd, body.reach)
        plugin.kick(s.key)
        return plugin.view(s)

    @r.get("")
    async def list_sessions(request: Request, all: bool = False, node: str | None = None) -> list[dict[str, Any]]:
        rows = plugin.sessions_of(_principal(request), all, node, _admin(request))
        access, caller = getattr(request.app.state, "access", None), getattr(request.state, "caller", None)
        if access is not None and caller is not None:  # root listing others' sessions: journalled (access.admin)
            access.audit_list(caller, "sessions", [(s.id, s.user) for s in rows])
        return [plugin.view(s) for s in rows]

    @r.get("/{sid}")
    async def get_session(sid: str, request: Request, user: str | None = None) -> dict[str, Any]:
        return plugin.view(owned(sid, request, user))

    @r.get("/{sid}/unread")
    async def unread(sid: str, request: Request, user: str | None = None) -> dict[str, Any]:
        return plugin.unread_view(owned(sid, request, user))

    @r.post("/{sid}/ack")
    async def ack(sid: str, body: AckBody, request: Request, user: str | None = None) -> dict[str, Any]:
        return {"acked": plugin.ack_jobs(owned(sid, request, user), body.jobs, body.upto, body.channel)}

    @r.post("/{sid}/read")
    async def read(sid: str, body: ReadBody, request: Request, user: str | None = None) -> dict[str, Any]:
        s = owned(sid, request, user)
        return {"session": s.id, "marked": plugin.mark_read(s, body.jobs, body.via)}

    @r.post("/{sid}/turn")
    async def turn(sid: str, body: TurnBody, request: Request, user: str | None = None) -> dict[str, Any]:
        s = owned(sid, request, user)
        plugin.set_turn(s, body.state, reset_blocks=body.state is TurnState.IN_TURN)
        return {"session": s.id, "turn_state": str(body.state)}

    @r.post("/{sid}/hook")
    async def hook(sid: str, body: HookBody, request: Request) -> dict[str, Any]:
        """What a hook run needs in one round trip; may long-poll (Stop, rewake)."""
        return await plugin.hook_run(_principal(request), sid, _hook_call(body))

    _campaign_routes(r, plugin, owned)
    return r


def _hook_call(body: HookBody) -> HookCall:
    plan = [(p.text, p.status) for p in body.plan] if body.plan is not None else None
    return HookCall(
        body.event,
        body.budget,
        body.stop_hook_active,
        harness=body.harness,
        cwd=body.cwd,
        reach=body.reach,
        plan=plan,
        plan_source=body.plan_source,
        prompt_id=body.prompt_id,
    )


def _campaign_routes(
    r: APIRouter, plugin: DeliveryService, owned: Callable[[str, Request, str | None, bool], Session]
) -> None:
    """`/{sid}/campaign`: the campaign state, its resume plan and the suspend record (issue 18)."""

    @r.get("/{sid}/campaign")
    async def campaign(sid: str, request: Request, user: str | None = None) -> dict[str, Any]:
        """The session's campaign state and its one-paragraph summary (owner only)."""
        from frontdesk.agents.campaign_summary import render_summary

        c = plugin.campaign_service().load(owned(sid, request, user, False))
        return {**c.to_dict(), "summary": render_summary(c)}

    @r.post("/{sid}/campaign/resume")
    async def resume(sid: str, body: ResumeBody, request: Request, user: str | None = None) -> dict[str, Any]:
        """How to resume the session; with `commit`, a new incarnation and its reports handed over."""
        s = owned(sid, request, user, not body.commit)  # the plan alone changes nothing
        return plugin.resume(s, body.dir, body.headless, body.harness_args, body.commit).to_dict()

    @r.post("/{sid}/campaign/suspend")
    async def suspend(sid: str, request: Request, user: str | None = None) -> dict[str, Any]:
        """Record that the harness was ended on purpose (the CLI signals it); the jobs run on."""
        return plugin.campaign_service().suspended(owned(sid, request, user, False)).to_dict()
