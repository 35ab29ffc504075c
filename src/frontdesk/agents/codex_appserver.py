"""One turn on a Codex thread through `codex app-server` (JSON-RPC, one JSON object a line on stdio).

The resume path for Codex threads that an app-server client started (an IDE, a service: the rollout's
`session_meta.source` is not `exec`/`cli`), or when asked (`frontdesk sessions resume --via app-server`):
`initialize`, `initialized`, `thread/resume {threadId, cwd}`, `turn/start {threadId, input}`, then the
notifications until `turn/completed`. The agent's messages go to stdout as they complete; the exit status
is 0 when the turn completed. Nobody is there to approve: the thread resumes with `approvalPolicy: never`
and any approval the server still asks for is declined. Checked with Codex 0.171.0. Stdlib only.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Sequence
from queue import Empty, Queue
from typing import IO, Any

from frontdesk.errors import BackendError, UserError

__all__ = ["AppServer", "EXEC_SOURCES", "resume_turn", "started_by_app_server"]

EXEC_SOURCES = frozenset({"exec", "cli"})
"""`session_meta.source` of threads the Codex CLI itself started (anything else came through the app server)."""


def started_by_app_server(rollout: str | None) -> bool:
    """Whether the thread's rollout file says an app-server client started it (its first line, session_meta)."""
    if not rollout:
        return False
    try:  # a regular file only, opened without blocking: a FIFO or device named as the rollout must not hang
        with open(os.open(rollout, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC), "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return False
            first = json.loads(fh.readline(1 << 20) or b"null")
    except (OSError, ValueError, RecursionError):
        return False
    payload = first.get("payload") if isinstance(first, dict) and first.get("type") == "session_meta" else None
    source = payload.get("source") if isinstance(payload, dict) else None
    return isinstance(source, str) and source not in EXEC_SOURCES


class AppServer:
    """A `codex app-server` child and its JSON-RPC stream (requests answered in order, notifications queued)."""

    def __init__(
        self,
        argv: Sequence[str],
        cwd: str,
        stderr: IO[bytes] | None = None,
        env: dict[str, str] | None = None,
        own_group: bool = False,
    ) -> None:
        try:
            self.proc = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                start_new_session=own_group,
            )
        except OSError as exc:
            raise UserError(f"{argv[0]}: {exc.strerror or exc}") from None
        self.inbox: Queue[dict[str, Any] | None] = Queue()
        self._next = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                msg = json.loads(line)
            except (ValueError, RecursionError):  # a deeply nested line must not end this reader thread
                continue
            if isinstance(msg, dict):
                self.inbox.put(msg)
        self.inbox.put(None)  # the server ended

    def send(self, msg: dict[str, Any]) -> None:
        """Write one message."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()

    def next(self, timeout: float | None) -> dict[str, Any]:
        """The next message; BackendError when the server ended or said nothing for `timeout` seconds."""
        try:
            msg = self.inbox.get(timeout=timeout)
        except Empty:
            raise BackendError(f"codex app-server: no answer in {timeout} s") from None
        if msg is None:
            raise BackendError(f"codex app-server ended (exit {self.proc.wait()}) before the turn did")
        return msg

    def call(self, method: str, params: dict[str, Any], timeout: float = 120.0) -> dict[str, Any]:
        """A request and its result (notifications that come first are answered or kept by `on_other`)."""
        self._next += 1
        rid = self._next
        self.send({"id": rid, "method": method, "params": params})
        while True:
            msg = self.next(timeout)
            if msg.get("id") == rid and "method" not in msg:
                if "error" in msg:
                    err = msg["error"] if isinstance(msg["error"], dict) else {}
                    raise BackendError(f"codex app-server {method}: {err.get('message', msg['error'])}")
                result: dict[str, Any] = msg.get("result") or {}
                return result
            self.on_other(msg)

    def on_other(self, msg: dict[str, Any]) -> None:
        """A server request gets an answer at once (approvals declined); notifications are dropped."""
        if "id" in msg and "method" in msg:
            decline = {"decision": "decline"} if str(msg["method"]).endswith("requestApproval") else None
            if decline is not None:
                self.send({"id": msg["id"], "result": decline})
            else:
                self.send({"id": msg["id"], "error": {"code": -32601, "message": "frontdesk: nobody to answer"}})

    def close(self) -> int:
        """End the server (stdin closed, then a signal if it lingers); its exit status."""
        if self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            code = self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()  # the reader saw EOF when the server ended
        return code


def _thread_params(thread: str, cwd: str, sandbox: str | None) -> dict[str, Any]:
    params: dict[str, Any] = {"threadId": thread, "cwd": cwd, "approvalPolicy": "never"}
    return {**params, "sandbox": sandbox} if sandbox else params


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _on_message(msg: dict[str, Any], turn_id: Any, out: IO[str]) -> int | None:
    """An agent message is written out; the turn's end gives the exit status (None: the turn goes on)."""
    params = _dict(msg.get("params"))
    item = _dict(params.get("item"))
    if msg.get("method") == "item/completed" and item.get("type") == "agentMessage":
        out.write(str(item.get("text") or "") + "\n")
        out.flush()
        return None
    done = _dict(params.get("turn"))
    if msg.get("method") != "turn/completed" or done.get("id") not in (turn_id, None):
        return None
    if done.get("status") == "completed":
        return 0
    error = _dict(done.get("error")).get("message")
    sys.stderr.write(f"frontdesk: the Codex turn ended {done.get('status')}: {error or '-'}\n")
    return 1


def resume_turn(
    codex_bin: str,
    thread: str,
    cwd: str,
    prompt: str,
    *,
    sandbox: str | None = None,
    server_args: Sequence[str] = (),
    out: IO[str] | None = None,
) -> int:
    """Resume `thread` in the app server, run one turn with `prompt`; 0 when the turn completed."""
    out = out or sys.stdout
    server = AppServer([codex_bin, "app-server", *server_args], cwd)
    try:
        server.call("initialize", {"clientInfo": {"name": "frontdesk", "title": "frontdesk", "version": "1"}})
        server.send({"method": "initialized"})
        server.call("thread/resume", _thread_params(thread, cwd, sandbox))
        turn = server.call("turn/start", {"threadId": thread, "input": [{"type": "text", "text": prompt}]})
        turn_id = _dict(turn.get("turn")).get("id")
        while True:
            msg = server.next(None)
            ended = _on_message(msg, turn_id, out)
            if ended is not None:
                return ended
            server.on_other(msg)
    finally:
        server.close()
