"""`/v1/sessions` routes: register, list, unread, ack, turn state, and the hooks' long-poll.

Every route acts for the request's principal: a session is read, acknowledged or woken only by its
own user (root may list all). Bodies are small pydantic models; errors are frontdesk errors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field

from frontdesk.agents.channels.base import choose
from frontdesk.agents.delivery import live_channel, route_line
from frontdesk.agents.framing import frame_wake
from frontdesk.agents.model import Session, TurnState
from frontdesk.agents.procinfo import with_start
from frontdesk.errors import UserError

if TYPE_CHECKING:
    from frontdesk.agents.plugin import AgentsPlugin

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
    event: Literal["SessionStart", "UserPromptSubmit", "Stop", "SubagentStop", "SessionEnd", "rewake", "notify"]
    harness: str | None = Field(default=None, max_length=40)
    cwd: str | None = Field(default=None, max_length=4096)
    reach: dict[str, Any] = Field(default_factory=dict)
    stop_hook_active: bool = False
    budget: float = Field(default=600.0, ge=0, le=7 * 86400)


class AckBody(BaseModel):
    """POST /v1/sessions/{id}/ack: the jobs whose reports the hook handed to the harness."""

    model_config = ConfigDict(extra="forbid")
    jobs: list[int] = Field(default_factory=list, max_length=10000)
    upto: int | None = None
    channel: str = Field(default="hooks", max_length=40)


class ReadBody(BaseModel):
    """POST /v1/sessions/{id}/read: reports the session read itself (wait, report, MCP)."""

    model_config = ConfigDict(extra="forbid")
    jobs: list[int] = Field(min_length=1, max_length=10000)
    via: Literal["wait", "report", "run", "mcp-wait", "mcp-report"] = "report"


class TurnBody(BaseModel):
    """POST /v1/sessions/{id}/turn."""

    model_config = ConfigDict(extra="forbid")
    state: TurnState


def _principal(request: Request) -> str:
    return str(getattr(request.state, "principal", None) or "unknown")


def build_router(plugin: AgentsPlugin) -> APIRouter:
    """The routes, bound to one plug-in instance."""
    r = APIRouter(prefix="/sessions", tags=["sessions"])

    def store() -> Any:
        if plugin.store is None:
            raise UserError("the agents plug-in is not attached")
        return plugin.store

    def view(s: Session) -> dict[str, Any]:
        st = store()
        active = st.active_jobs(s.id)
        usable, reasons = choose(plugin.channels, s)
        return {
            **s.to_dict(),
            "active_jobs": active,
            "running": len(active),
            "unread": st.unread_counts([s.id])[s.id],
            "channel": usable[0].name if usable else None,
            "channels": reasons,
            "route": route_line(plugin.channels, s),
        }

    @r.post("")
    async def register(body: RegisterBody, request: Request) -> dict[str, Any]:
        s, created = store().upsert(
            body.session, _principal(request), plugin.clock(), body.harness, body.cwd, with_start(body.reach)
        )
        if created:
            from frontdesk.events.models import Event, EventKind

            plugin.gw.publish(
                Event(
                    EventKind.SESSION_REGISTERED,
                    session=s.id,
                    principal=s.user,
                    data={"session": s.id, "harness": str(s.harness), "user": s.user},
                )
            )
        plugin.kick(s.id)
        return view(s)

    @r.get("")
    async def list_sessions(request: Request, all: bool = False) -> list[dict[str, Any]]:
        user = _principal(request)
        rows = store().list_sessions(None if (all and user == "root") else user)
        return [view(s) for s in rows]

    @r.get("/{sid}")
    async def get_session(sid: str, request: Request) -> dict[str, Any]:
        return view(store().owned(sid, _principal(request)))

    @r.get("/{sid}/unread")
    async def unread(sid: str, request: Request) -> dict[str, Any]:
        s = store().owned(sid, _principal(request))
        reps = store().unread(s.id)
        return {"session": s.id, "reports": [r.__dict__ for r in reps], "text": frame_wake(reps)}

    @r.post("/{sid}/ack")
    async def ack(sid: str, body: AckBody, request: Request) -> dict[str, Any]:
        s = store().owned(sid, _principal(request))
        upto = body.upto
        if upto is None:
            seqs = [r.seq for r in store().unread(s.id) if r.job_id in set(body.jobs)]
            upto = max(seqs) if seqs else None
        if upto is None:
            return {"acked": []}
        return {"acked": plugin.acknowledge(s, upto, body.channel)}

    @r.post("/{sid}/read")
    async def read(sid: str, body: ReadBody, request: Request) -> dict[str, Any]:
        s = store().owned(sid, _principal(request))
        return {"session": s.id, "marked": plugin.mark_read(s, body.jobs, body.via)}

    @r.post("/{sid}/turn")
    async def turn(sid: str, body: TurnBody, request: Request) -> dict[str, Any]:
        s = store().owned(sid, _principal(request))
        plugin.set_turn(s, body.state, reset_blocks=body.state is TurnState.IN_TURN)
        return {"session": s.id, "turn_state": str(body.state)}

    @r.post("/{sid}/hook")
    async def hook(sid: str, body: HookBody, request: Request) -> dict[str, Any]:
        """What a hook run needs in one round trip; may long-poll (Stop, rewake)."""
        st = store()
        reach = with_start({**body.reach, "hooks_seen": True})
        s, created = st.upsert(sid, _principal(request), plugin.clock(), body.harness, body.cwd, reach)
        if created:
            from frontdesk.events.models import Event, EventKind

            plugin.gw.publish(
                Event(
                    EventKind.SESSION_REGISTERED,
                    session=s.id,
                    principal=s.user,
                    data={"session": s.id, "harness": str(s.harness), "user": s.user},
                )
            )
        active = st.active_jobs(s.id)
        base = {"session": s.id, "active_jobs": active}
        if body.event == "SessionEnd":
            plugin.hooks.release(s.id)
            plugin.set_turn(s, TurnState.ENDED)
            return {**base, "delivery": None}
        if body.event == "notify":
            plugin.set_turn(s, TurnState.IDLE)
            return {**base, "delivery": None}
        if body.event in ("SessionStart", "UserPromptSubmit"):
            state = TurnState.IN_TURN if body.event == "UserPromptSubmit" else TurnState.IDLE
            st.set_turn(s.id, state, plugin.clock(), reset_blocks=True)
            note = plugin.adopt_ended(s) if body.event == "SessionStart" else None
            got = plugin.claim_now(st.get(s.id), note)
            return {**base, **got, "unread": len(st.unread(s.id))}
        if body.event == "rewake":
            if not active and not st.unread(s.id):
                plugin.hooks.release(s.id, "rewake")  # an older background hook has nothing to wait for
                return {**base, "delivery": None, "reason": "nothing running or unread"}
            got = await plugin.wait_for_reports(st.get(s.id), "rewake", body.budget)
            return {**base, **got}
        # Stop / SubagentStop: the turn is ending
        if s.stop_blocks >= plugin.cfg.max_stop_blocks:
            plugin.set_turn(s, TurnState.IDLE)
            return {**base, "delivery": None, "reason": f"{s.stop_blocks} blocks in a row: letting it stop"}
        unread_now = st.unread(s.id)
        if not active and not unread_now:
            plugin.hooks.release(s.id, "rewake")
            plugin.set_turn(s, TurnState.IDLE)
            return {**base, "delivery": None, "reason": "nothing running or unread"}
        st.set_turn(s.id, TurnState.STOPPING, plugin.clock())
        wait_s = 0.0 if body.stop_hook_active else plugin.stop_wait_seconds(s, body.budget, active)
        attended = s.reach.get("attended", True)  # `claude -p` (unattended) exits after its turn: hold it
        if attended and live_channel(plugin.channels, s) is not None:
            wait_s = 0.0  # issue 8: a live inbox wakes the idle session later; do not hold its turn open
        elif attended:
            wait_s = min(wait_s, plugin.cfg.stop_hold_s)  # issue 19: then the rewake hook / next turn takes it
        got = await plugin.wait_for_reports(st.get(s.id), "stop", wait_s)
        if got.get("delivery"):
            st.count_block(s.id)
            st.set_turn(s.id, TurnState.IN_TURN, plugin.clock())
        else:
            plugin.set_turn(s, TurnState.IDLE)
        return {**base, **got, "waited_s": wait_s}

    return r
