"""Refuse a JSON request body that writes a key twice, at any depth, before any route parses it.

Python's json (and so Starlette's `Request.json()`, FastAPI's body parsing and `api.fastsubmit`) keeps the last
of a repeated key silently: `{"spec": {"command": [..], "command": [..]}}` would run the second command. Spec
text already refuses a repeated key (`spec.bounds.unique_keys`); this pure ASGI layer does the same for every
JSON body the gateway accepts, in one place. It sits inside `Limits` (the body is capped before it is read
whole here) and outside the routes (the fast ones included); a body that does not parse is left to the route,
which says why. The answer is the app's one-line `bad_input` (400); nothing is stored.
"""

from __future__ import annotations

import json

from frontdesk.api.fastsubmit import read_body, replay
from frontdesk.api.limits import ASGIApp, Receive, Scope, Send
from frontdesk.spec.bounds import unique_keys

__all__ = ["UniqueKeys", "duplicate_key"]


def duplicate_key(body: bytes) -> str | None:
    """The one-line complaint about a repeated key in `body`, or None (unique, or not JSON at all)."""
    try:
        json.loads(body, object_pairs_hook=unique_keys)
    except ValueError as exc:  # JSONDecodeError is a ValueError too: tell them apart by the hook's message
        text = str(exc)
        return f"request body: {text}" if text.startswith("duplicate key ") else None
    except RecursionError:  # nested past the limit: the route refuses it
        return None
    return None


class UniqueKeys:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kinds = [v for k, v in scope.get("headers", ()) if k == b"content-type"]
        if scope["type"] != "http" or not any(b"json" in kind.lower() for kind in kinds):
            await self.app(scope, receive, send)
            return
        messages, body = await read_body(receive)
        problem = duplicate_key(body) if body else None
        if problem is None:
            await self.app(scope, replay(messages, receive), send)
            return
        answer = json.dumps({"error": "bad_input", "message": problem}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(answer)).encode())]
        await send({"type": "http.response.start", "status": 400, "headers": headers})
        await send({"type": "http.response.body", "body": answer})
