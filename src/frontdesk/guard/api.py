"""The guard's HTTP route, imported only by the server (FastAPI resolves these annotations at runtime)."""

from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Body, Request

if TYPE_CHECKING:
    from frontdesk.guard.plugin import GuardPlugin

__all__ = ["verdicts_router"]


def verdicts_router(plugin: "GuardPlugin") -> APIRouter:
    """`POST /v1/guard/verdicts` → `{"seq": N}`: a hook's ask or deny, journalled with its principal."""
    router = APIRouter()

    @router.post("/guard/verdicts")
    async def record(request: Request, body: dict[str, Any] = Body(...)) -> dict[str, Any]:  # noqa: B008
        # a session id names the caller's own session: the verdict is journalled with the caller as its principal
        return {"seq": plugin.record_verdict(body, getattr(request.state, "principal", None))}

    return router
