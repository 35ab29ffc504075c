"""Slurm pushes through the facility gateway: the EpilogSlurmctld tells one endpoint, users' gateways subscribe.

Fan-out: a `POST /v1/notify` that the facility gateway takes from a notifier (root, SlurmUser) with the job's
user in its `info` (`SLURM_JOB_UID`/`SLURM_JOB_USER`, set by Slurm in the epilog's environment) is stored as a
`slurm.ended` event whose principal is that user, before anyone is told; only for users whose gateway has
subscribed at least once (their uids are kept in `<home>/facility-subscribers.json`): a first subscription
starts at the head anyway, so the ends of the site's other users' jobs would be stored for nobody.

Subscription: `GET /v1/facility/slurm-events?since=N` is a server-sent stream of the `slurm.ended` events of
the CALLER's own uid (the kernel's `SO_PEERCRED` on the Unix socket; admins get their own too, never others'):
the stored ones after `since`, then live ones, each once. Without `since` (a first subscription) it starts at
the journal's head; a `since` beyond the head (the facility's journal was replaced) starts there too. The
first message is `event: head` with the journal's last seq, so a subscriber has a cursor at once. A user
holds at most MAX_PER_USER streams at a time (429 beyond).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import pwd
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse

from frontdesk.errors import Forbidden, RateLimited
from frontdesk.events.models import Event, EventKind
from frontdesk.gateway import Gateway
from frontdesk.identity import Caller

__all__ = ["router", "fan_out", "subscribers", "SLURM_ID", "Subscribers"]

router = APIRouter(prefix="/v1/facility")
log = logging.getLogger("frontdesk.facility")

SLURM_ID = re.compile(r"^[0-9]{1,12}(_[0-9]{1,9})?$")
"""A Slurm job id as the epilog names it: `844`, or `844_3` for an array task."""
KEEP_ALIVE_S = 15.0
MAX_PER_USER = 16
"""Open subscriptions per uid (a user's gateway holds one; a few more for restarts that overlap)."""
_open: dict[int, int] = {}
SUBSCRIBERS_FILE = "facility-subscribers.json"


class Subscribers:
    """The uids whose gateways have subscribed, kept in the state directory (0600) across restarts."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            found = json.loads(path.read_text())
        except (OSError, ValueError):
            found = []
        self.uids = (
            {u for u in found if isinstance(u, int) and not isinstance(u, bool)} if isinstance(found, list) else set()
        )

    def add(self, uid: int) -> None:
        """Remember a subscriber (written at once, atomically)."""
        if uid in self.uids:
            return
        self.uids.add(uid)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(json.dumps(sorted(self.uids)))
            os.replace(tmp, self.path)
        except OSError as exc:  # kept in memory: this gateway stores the user's job ends until it restarts
            log.warning("cannot keep the facility's subscribers in %s: %s", self.path, exc)


_subscribers: dict[Path, Subscribers] = {}


def subscribers(gw: Gateway) -> Subscribers:
    """This gateway's subscribers (read once per state directory)."""
    path = gw.settings.home / SUBSCRIBERS_FILE
    if path not in _subscribers:
        _subscribers[path] = Subscribers(path)
    return _subscribers[path]


def _user_of(info: Mapping[str, Any]) -> tuple[int, str] | None:
    """The ended job's user (uid, name) from the epilog's environment; None when absent or unknown here."""
    uid, name = str(info.get("SLURM_JOB_UID", "")), str(info.get("SLURM_JOB_USER", ""))
    try:
        pw = pwd.getpwuid(int(uid)) if uid.isdigit() else pwd.getpwnam(name) if name else None
    except (KeyError, OverflowError):
        return None
    return None if pw is None else (pw.pw_uid, pw.pw_name)


def fan_out(gw: Gateway, backend: str, ids: Sequence[str], info: Mapping[str, Any]) -> Event | None:
    """On a facility gateway, store a notifier's Slurm job end as a `slurm.ended` event for the job's user."""
    if gw.settings.mode != "facility" or backend != "slurm":
        return None
    good = [i for i in ids if SLURM_ID.match(i)]
    user = _user_of(info)
    if not good or user is None or user[0] not in subscribers(gw).uids:
        return None
    exit_code = str(info.get("SLURM_JOB_EXIT_CODE2", ""))[:32]
    data = {"slurm_ids": good[:16], "uid": user[0], "exit_code": exit_code or None}
    return gw.publish(Event(EventKind.SLURM_ENDED, principal=user[1], data=data))


def _mine(caller: Caller, event: Event) -> bool:
    return event.kind is EventKind.SLURM_ENDED and event.data.get("uid") == caller.uid


@router.get("/slurm-events", response_model=None)
async def slurm_events(request: Request, since: int | None = Query(default=None, ge=0)) -> StreamingResponse:
    """The caller's own Slurm job ends, as server-sent events (see the module's docstring)."""
    gw: Gateway = request.app.state.gw
    caller: Caller = request.state.caller
    if caller.uid is None:
        raise request.app.state.access.deny(caller, "subscribe to", "Slurm job events", None)
    if gw.settings.mode != "facility":
        raise Forbidden("only a facility gateway fans Slurm job events out")
    if _open.get(caller.uid, 0) >= MAX_PER_USER:  # each stream holds a bus subscriber: a user cannot hoard them
        raise RateLimited(f"{caller.user} already has {MAX_PER_USER} subscriptions open")
    subscribers(gw).add(caller.uid)  # from now on this user's job ends are stored for it
    head = gw.store.last_seq()
    start = head if since is None or since > head else since
    return StreamingResponse(_counted(caller.uid, _stream(gw, caller, start, head)), media_type="text/event-stream")


async def _counted(uid: int, stream: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The stream, counted among its user's open subscriptions while it runs."""
    _open[uid] = _open.get(uid, 0) + 1
    try:
        async for chunk in stream:
            yield chunk
    finally:
        _open[uid] -= 1
        if not _open[uid]:
            del _open[uid]


async def _stream(gw: Gateway, caller: Caller, since: int, head: int) -> AsyncIterator[bytes]:
    queue: asyncio.Queue[Event] = asyncio.Queue()
    unsubscribe = gw.bus.subscribe(queue.put_nowait)  # before the replay: nothing falls between the two
    try:
        yield f"event: head\nid: {head}\ndata: {json.dumps({'head': head, 'since': since})}\n\n".encode()
        last = since
        while page := gw.store.events_since(last, kinds=[str(EventKind.SLURM_ENDED)], limit=1000):
            for event in page:  # the stored ones first: events are stored before they are sent
                last = event.seq
                if _mine(caller, event):
                    yield _sse(event)
        idle = 0.0
        while not gw.closing:  # a stopping gateway ends its streams; subscribers resume from their cursor
            try:
                async with asyncio.timeout(1.0):  # not wait_for (gh-86296)
                    event = await queue.get()
            except TimeoutError:
                idle += 1.0
                if idle >= KEEP_ALIVE_S:
                    idle = 0.0
                    yield b": keep-alive\n\n"
                continue
            if event.seq > last and _mine(caller, event):
                last = event.seq
                yield _sse(event)
    finally:
        unsubscribe()


def _sse(event: Event) -> bytes:
    return f"id: {event.seq}\ndata: {json.dumps(event.to_dict(), default=str)}\n\n".encode()
