"""A stand-in for the OpenAI Responses API on loopback, for driving the real Codex binary offline.

Codex sends `POST /v1/responses` with `"stream": true`; every request is recorded and answered as the event
stream `response.created`, `response.output_item.added`, (`response.output_text.delta`),
`response.output_item.done`, `response.completed`. The answers come from a script, one reply a request:
`("shell", CMD)` (a `function_call` of Codex's shell tool `exec_command` with `{"cmd": CMD}`), `("plan", JSON)`
(its `update_plan` tool) or `("text", TEXT)` (an assistant message); past the script (or with none) it answers
the assistant message `reply` ("Done."). Stdlib only.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

from loopback import Exchange, Loopback

__all__ = ["ResponsesStandIn", "input_text"]

_USAGE = {
    "input_tokens": 10,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 2,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 12,
}


def input_text(body: dict[str, Any]) -> str:
    """Every text the request carries in `input` (user messages, instructions aside)."""
    out: list[str] = []
    for item in body.get("input") or []:
        if not isinstance(item, dict):
            continue
        content = item.get("content")
        if isinstance(content, str):
            out.append(content)
        for part in content if isinstance(content, list) else []:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                out.append(part["text"])
    return "\n".join(out)


def _item(reply: tuple[str, str], n: int) -> dict[str, Any]:
    kind, value = reply
    if kind in ("shell", "plan"):  # plan: Codex's update_plan tool, value = JSON {"plan": [{step, status}]}
        name, args = ("exec_command", json.dumps({"cmd": value})) if kind == "shell" else ("update_plan", value)
        return {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "name": name,
                "arguments": args, "status": "completed"}  # fmt: skip
    text = {"type": "output_text", "text": value, "annotations": []}
    return {"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed", "content": [text]}


def _events(reply: tuple[str, str], n: int) -> list[dict[str, Any]]:
    item, rid = _item(reply, n), f"resp_{n}"
    created = {"id": rid, "object": "response", "status": "in_progress", "output": []}
    events: list[dict[str, Any]] = [{"type": "response.created", "response": created}]
    if item["type"] == "message":
        added = {**item, "status": "in_progress", "content": []}
        delta = {"type": "response.output_text.delta", "output_index": 0, "item_id": item["id"],
                 "content_index": 0, "delta": reply[1]}  # fmt: skip
        events += [{"type": "response.output_item.added", "output_index": 0, "item": added}, delta]
    else:
        events.append(
            {"type": "response.output_item.added", "output_index": 0, "item": {**item, "status": "in_progress"}}
        )
    done = {"id": rid, "object": "response", "status": "completed", "output": [item], "usage": _USAGE}
    return [*events, {"type": "response.output_item.done", "output_index": 0, "item": item},
            {"type": "response.completed", "response": done}]  # fmt: skip


class ResponsesStandIn(Loopback):
    """`with ResponsesStandIn(script, first_id=1) as api:` (or `.start()`/`.stop()`) → `api.url` (ends in /v1),
    `api.requests` (the bodies), `api.seen` (with the time each came), `api.wait_for(...)`."""

    path = "/v1"
    listing = {"object": "list", "data": [], "models": []}

    def __init__(self, script: list[tuple[str, str]] | None = None, first_id: int = 1, reply: str = "Done.") -> None:
        """`first_id`: the number of the first response / call id (a resumed thread already holds lower ones)."""
        self.script = list(script or [])
        self.first_id = first_id
        self.reply = reply
        self.seen: list[tuple[float, dict[str, Any]]] = []
        self._cond = threading.Condition()

    @property
    def requests(self) -> list[dict[str, Any]]:
        with self._cond:
            return [body for _, body in self.seen]

    def post(self, exchange: Exchange, body: dict[str, Any]) -> None:
        with self._cond:
            self.seen.append((time.time(), body))
            self._cond.notify_all()
            n = len(self.seen)
            reply = self.script[n - 1] if n <= len(self.script) else ("text", self.reply)
        exchange.send_events((e["type"], e) for e in _events(reply, n + self.first_id - 1))

    def wait_for(self, pred: Callable[[dict[str, Any]], bool], timeout: float, after: int = 0) -> dict[str, Any]:
        """The first request after the first `after` whose body satisfies `pred`."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for _, body in self.seen[after:]:
                    if pred(body):
                        return body
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no matching request in {timeout}s ({len(self.seen)} seen)")
                self._cond.wait(left)

    @staticmethod
    def outputs(body: dict[str, Any]) -> list[str]:
        """The shell outputs (function_call_output) the request carries, in order."""
        out = []
        for item in body.get("input") or []:
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                raw = item.get("output")
                out.append(raw if isinstance(raw, str) else json.dumps(raw))
        return out
