"""Limits at the HTTP edge: request bodies are capped (413); a full state disk answers one clear JSON error
(507) instead of a 500 with a traceback per request; numbers past 2^63-1 and lone surrogates that reach
storage answer 422.

A pure ASGI middleware (not BaseHTTPMiddleware), so it sees the body as it streams in and stops reading past the
cap; the route then fails to parse, and whatever it answers is replaced by the 413.
"""

from __future__ import annotations

import errno
import json
import logging
import sqlite3
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = ["DEFAULT_MAX_BODY", "Limits", "disk_full", "max_body_from"]

log = logging.getLogger("frontdesk.api")

DEFAULT_MAX_BODY = 1024 * 1024
"""Request body cap in bytes ([gateway] max_body_bytes)."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def disk_full(exc: BaseException) -> bool:
    """Whether an error means the state disk (or its quota) is full."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return isinstance(exc, sqlite3.OperationalError) and "full" in str(exc).lower()


class Limits:
    """Cap request bodies; turn disk-full failures into 507 with a one-line JSON error."""

    def __init__(self, app: ASGIApp, max_body: int = DEFAULT_MAX_BODY, home: str = "") -> None:
        self.app = app
        self.max_body = max_body
        self.home = home
        self._last_log = 0.0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = _content_length(scope)
        if length is not None and length > self.max_body:
            await self._too_large(send)
            return
        state = {"seen": 0, "over": False, "started": False}

        async def counted() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                state["seen"] += len(message.get("body", b""))
                if state["seen"] > self.max_body:
                    state["over"] = True
                    return {"type": "http.request", "body": b"", "more_body": False}  # stop reading here
            return message

        async def guarded(message: Message) -> None:
            if state["over"]:
                return  # the 413 below replaces whatever the route answered
            state["started"] = True
            await send(message)

        try:
            await self.app(scope, counted, guarded)
        except Exception as exc:
            if state["over"] and not state["started"]:
                await self._too_large(send)
                return
            if state["started"]:
                raise
            if isinstance(exc, OverflowError):  # an id or count past what SQLite stores (2^63-1)
                await _json(send, 422, "bad_input", "a number in the request is out of range (at most 2^63-1)")
                return
            if isinstance(exc, UnicodeEncodeError):  # a lone surrogate that reached storage
                await _json(send, 422, "bad_input", "the request holds text that is not valid Unicode")
                return
            if not disk_full(exc):
                raise
            self._log_disk_full(exc)
            await _json(send, 507, "disk_full", self._disk_message())
            return
        if state["over"]:
            await self._too_large(send)

    async def _too_large(self, send: Send) -> None:
        await _json(send, 413, "too_large", f"request body over the limit of {self.max_body} bytes")

    def _disk_message(self) -> str:
        where = f" ({self.home})" if self.home else ""
        return f"the gateway's state disk is full{where}: nothing was accepted; free space and retry"

    def _log_disk_full(self, exc: BaseException) -> None:
        now = time.monotonic()
        if now - self._last_log >= 60:  # one line a minute, never a traceback per request
            self._last_log = now
            log.error("state disk full: requests answer 507 until space is freed (%s)", exc)


def _content_length(scope: Scope) -> int | None:
    for key, value in scope.get("headers", []):
        if key == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _json(send: Send, status: int, code: str, message: str) -> None:
    body = json.dumps({"error": code, "message": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def max_body_from(section: dict[str, Any]) -> int:
    """The body cap from `[gateway] max_body_bytes` (bytes, or a size such as "4M")."""
    from frontdesk.errors import ConfigError
    from frontdesk.spec.units import parse_memory

    raw = section.get("max_body_bytes", DEFAULT_MAX_BODY)
    try:
        value = parse_memory(raw)
    except ValueError as exc:
        raise ConfigError(f"[gateway] max_body_bytes: {exc}") from None
    if value < 1024:
        raise ConfigError("[gateway] max_body_bytes: at least 1024 bytes")
    return value
