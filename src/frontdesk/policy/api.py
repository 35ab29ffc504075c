"""The `/v1/policy/...` endpoints (mounted under /v1 by the API): show, history, rollback, reload, drain."""

from __future__ import annotations

import os
import pwd
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field

from frontdesk.errors import Forbidden
from frontdesk.policy.health import Verdict

if TYPE_CHECKING:
    from frontdesk.policy.plugin import PolicyPlugin

__all__ = ["build_router"]


class RollbackBody(BaseModel):
    """`POST /v1/policy/rollback`."""

    model_config = ConfigDict(extra="forbid")
    version: int = Field(ge=0, le=2**31)


class DrainBody(BaseModel):
    """`POST /v1/policy/drain` and `/undrain`: one node named (a Slurm node name or `local`), a one-line reason."""

    model_config = ConfigDict(extra="forbid")
    node: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
    reason: str = Field(
        default="drained by an administrator", min_length=1, max_length=500, pattern=r"^[^\x00-\x1f\x7f]*$"
    )


def _admin(request: Request) -> None:
    access = getattr(request.app.state, "access", None)
    if access is not None:  # identities (frontdesk.api.access): admins only, refusals journalled
        access.admin(request.state.caller, "change")
        return
    principal = getattr(request.state, "principal", None)
    if principal not in (pwd.getpwuid(os.getuid()).pw_name, "root"):
        raise Forbidden(f"only the gateway's owner may change the policy (you are {principal})")


def build_router(plugin: PolicyPlugin) -> APIRouter:
    """The router over one PolicyPlugin."""
    r = APIRouter()

    @r.get("/policy")
    async def show() -> dict[str, Any]:
        return {
            "version": plugin.version,
            "refused": plugin.refused,
            "config": plugin.cfg.model_dump(mode="json"),
        }

    @r.get("/policy/history")
    async def history() -> dict[str, Any]:
        return {"active": plugin.version, "versions": plugin.history.list() if plugin.history else []}

    @r.post("/policy/rollback")
    async def rollback(body: RollbackBody, request: Request) -> dict[str, Any]:
        _admin(request)
        result: dict[str, Any] = plugin.rollback(body.version)
        return result

    @r.post("/policy/reload")
    async def reload(request: Request) -> dict[str, Any]:
        _admin(request)
        result: dict[str, Any] = plugin.reload()
        return result

    @r.post("/policy/drain")
    async def drain(body: DrainBody, request: Request) -> dict[str, Any]:
        _admin(request)
        plugin.set_health(Verdict(body.node, True, "admin", body.reason))
        return {"drained": sorted(plugin.drained)}

    @r.post("/policy/undrain")
    async def undrain(body: DrainBody, request: Request) -> dict[str, Any]:
        _admin(request)
        plugin.set_health(Verdict(body.node, False))
        return {"drained": sorted(plugin.drained)}

    return r
