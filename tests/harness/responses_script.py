"""A scripted stand-in for the OpenAI Responses API on loopback: each request Codex sends is answered by the
next reply of a script, `("shell", CMD)` (a `function_call` of Codex's shell tool `exec_command` with
`{"cmd": CMD}`), `("plan", JSON)` (its `update_plan` tool) or `("text", TEXT)` (an assistant message);
past the script it answers "Done.". Every
request body is recorded. Stdlib only.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["ScriptedResponses"]

_USAGE = {
    "input_tokens": 10,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 2,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 12,
}


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
    return [
        {"type": "response.created", "response": {"id": rid, "object": "response", "status": "in_progress"}},
        {"type": "response.output_item.added", "output_index": 0, "item": {**item, "status": "in_progress"}},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {
            "type": "response.completed",
            "response": {"id": rid, "object": "response", "status": "completed", "output": [item], "usage": _USAGE},
        },
    ]


class ScriptedResponses:
    """`with ScriptedResponses(script, first_id=1) as api:` → `api.url` (ends in /v1), `api.requests`."""

    def __init__(self, script: list[tuple[str, str]], first_id: int = 1) -> None:
        self.script = list(script)
        self.first_id = first_id
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                data = json.dumps({"object": "list", "data": [], "models": []}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    body = {}
                with standin.lock:
                    standin.requests.append(body)
                    n = len(standin.requests)
                    reply = standin.script[n - 1] if n <= len(standin.script) else ("text", "Done.")
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                for event in _events(reply, n + standin.first_id - 1):
                    self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> ScriptedResponses:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

    @staticmethod
    def outputs(body: dict[str, Any]) -> list[str]:
        """The shell outputs (function_call_output) the request carries, in order."""
        out = []
        for item in body.get("input") or []:
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                raw = item.get("output")
                out.append(raw if isinstance(raw, str) else json.dumps(raw))
        return out
