"""`GET /metrics`: the Prometheus scrape endpoint (aggregates only: no user names, job names or commands)."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request, Response

__all__ = ["router"]

router = APIRouter()


@router.get("/metrics", include_in_schema=False)
async def metrics(request: Request) -> Response:
    """The gateway's metrics in the Prometheus text format, read from its store."""
    from frontdesk.telemetry.metrics import CONTENT_TYPE, exposition

    body = await asyncio.to_thread(exposition, request.app.state.gw.settings.db_path)
    return Response(content=body, media_type=CONTENT_TYPE)
