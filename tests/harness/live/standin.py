"""A scripted stand-in for the Anthropic Messages API on loopback, for driving the real Claude Code binary.

Claude Code sends `POST /v1/messages?beta=true` with `"stream": true`; the stand-in answers with the
standard server-sent event stream. What it answers is scripted by rules over the text of the request's
last user message (tool results included): the first rule whose `match` occurs there (and that has uses
left) gives the reply, either plain text (`end_turn`) or one `Bash` tool call (`tool_use`). Every request
is recorded, so a test can assert what reached the model and when. Stdlib only; one thread per request.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from anthropic_standin import last_user_text, message, message_events
from loopback import Exchange, Loopback

__all__ = ["Rule", "Seen", "StandIn"]


@dataclass
class Rule:
    """When the last user message contains `match`, answer with `text` or a Bash call of `bash`."""

    match: str
    text: str | None = None
    bash: str | None = None
    uses: int = 1
    delay_s: float = 0.0
    """Seconds to hold the reply before streaming it (a model that thinks: the turn stays in progress)."""


@dataclass
class Seen:
    """One request the stand-in received."""

    at: float
    body: dict[str, Any]
    last_user_text: str
    main_loop: bool
    """Whether it carries tools (the agent loop), as opposed to side calls (titles, summaries)."""


@dataclass
class StandIn(Loopback):
    """The server; `start()` binds 127.0.0.1 on a free port; `url` is the ANTHROPIC_BASE_URL."""

    rules: list[Rule] = field(default_factory=list)
    default_text: str = "Done."
    seen: list[Seen] = field(default_factory=list)
    _ids: Any = field(default_factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _changed: threading.Condition = field(init=False)

    def __post_init__(self) -> None:
        self._changed = threading.Condition(self._lock)

    def post(self, exchange: Exchange, body: dict[str, Any]) -> None:
        if "count_tokens" in exchange.path:
            exchange.send_json({"input_tokens": 10})
            return
        if not exchange.path.startswith("/v1/messages"):
            exchange.send_json({"type": "error", "error": {"type": "not_found_error", "message": exchange.path}}, 404)
            return
        rule = self._record(body)
        if rule is not None and rule.delay_s:
            time.sleep(rule.delay_s)
        blocks, msg_id, model = (
            self._blocks(rule, body),
            f"msg_{next(self._ids):06d}",
            body.get("model", "claude-standin"),
        )
        if body.get("stream"):
            exchange.send_events(((e["type"], e) for e in message_events(blocks, msg_id, model)), flush_each=True)
        else:
            exchange.send_json(message(blocks, msg_id, model))

    # -- scripting --------------------------------------------------------------------------------
    def _record(self, body: dict[str, Any]) -> Rule | None:
        text = last_user_text(body)
        main = bool(body.get("tools"))
        with self._changed:
            self.seen.append(Seen(time.time(), body, text, main))
            self._changed.notify_all()
            if not main:
                return None
            for rule in self.rules:
                if rule.uses > 0 and rule.match in text:
                    rule.uses -= 1
                    return rule
        return None

    def _blocks(self, rule: Rule | None, body: dict[str, Any]) -> list[dict[str, Any]]:
        if rule is not None and rule.bash is not None:
            return [
                {
                    "type": "tool_use",
                    "id": f"toolu_{next(self._ids):06d}",
                    "name": "Bash",
                    "input": {"command": rule.bash, "description": "run a command"},
                }
            ]
        text = rule.text if rule is not None and rule.text is not None else self.default_text
        if not body.get("tools"):
            text = "Session"  # titles and other side calls
        return [{"type": "text", "text": text}]

    # -- assertions -------------------------------------------------------------------------------
    def main_requests(self) -> list[Seen]:
        """The agent-loop requests so far."""
        with self._lock:
            return [s for s in self.seen if s.main_loop]

    def wait_for(self, pred: Callable[[Seen], bool], timeout: float, after: int = 0) -> Seen:
        """The first main-loop request after the first `after` matching `pred`; AssertionError on timeout."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                main = [s for s in self.seen if s.main_loop]
                for s in main[after:]:
                    if pred(s):
                        return s
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"no matching request within {timeout}s; last user texts: "
                        + repr([s.last_user_text[-200:] for s in main[-3:]])
                    )
                self._changed.wait(left)
