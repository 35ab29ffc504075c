"""`GET /v1/events`: the journal (a page) or a server-sent stream, each filtered to what the caller may see."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse

from frontdesk.api.reportview import event_for
from frontdesk.events.models import Event
from frontdesk.gateway import Gateway

__all__ = ["router"]

router = APIRouter(prefix="/v1")


@router.get("/events", response_model=None)
async def events(
    request: Request,
    since: int = Query(default=0, ge=0),
    follow: bool = False,
    job: int | None = None,
    kind: list[str] = Query(default=[]),
) -> Any:
    gw: Gateway = request.app.state.gw
    access, caller = request.app.state.access, request.state.caller

    def visible(e: Event) -> dict[str, Any] | None:
        return event_for(gw, caller, e) if access.sees_event(caller, e) else None  # a labmate's: no log lines

    if not follow:
        # A page of the journal, filtered; a page the caller may see none of is skipped, never answered
        # empty (clients page until an empty answer).
        cursor, shown = since, list[dict[str, Any]]()
        while not shown and (found := gw.store.events_since(cursor, job_id=job, kinds=kind)):
            shown = [d for e in found if (d := visible(e)) is not None]
            cursor = found[-1].seq
        return shown
    return StreamingResponse(_stream(gw, since, job, kind, visible), media_type="text/event-stream")


async def _stream(
    gw: Gateway, since: int, job: int | None, kinds: list[str], visible: Callable[[Event], dict[str, Any] | None]
) -> AsyncIterator[bytes]:
    """Server-sent events the caller may see: the stored journal after `since`, then live events, each once."""
    queue: asyncio.Queue[Event] = asyncio.Queue()
    unsubscribe = gw.bus.subscribe(queue.put_nowait)
    try:
        last = since
        for event in gw.store.events_since(since, job_id=job, kinds=kinds):
            last = event.seq
            if (shown := visible(event)) is not None:
                yield _sse(event.seq, shown)
        idle = 0.0
        while not gw.closing:  # a stopping gateway ends its streams; clients resume with --since
            try:
                async with asyncio.timeout(1.0):  # not wait_for: it can drop a disconnect's cancel (gh-86296)
                    event = await queue.get()
            except TimeoutError:
                idle += 1.0
                if idle >= 15:
                    idle = 0.0
                    yield b": keep-alive\n\n"
                continue
            idle = 0.0
            if event.seq <= last or (job is not None and event.job_id != job) or (kinds and event.kind not in kinds):
                continue
            last = event.seq
            if (shown := visible(event)) is not None:
                yield _sse(event.seq, shown)
    finally:
        unsubscribe()


def _sse(seq: int | None, shown: dict[str, Any]) -> bytes:
    return f"id: {seq}\ndata: {json.dumps(shown, default=str)}\n\n".encode()
