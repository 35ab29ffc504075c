"""Hostile lines and arguments on `frontdesk mcp`'s real stdio: every request gets an answer.

JSON-RPC 2.0: a line that is not JSON gets a -32700 error with id null; JSON that is no request gets -32600.
A tool's count argument below 1 is a clear tool error, never a silently different answer.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}},
}


class _Wire:
    """One `frontdesk mcp` process spoken to line by line."""

    def __init__(self, gw: Any) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "frontdesk.cli.main", "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=gw.env,
        )
        self.send(INIT)
        assert self.answer()["id"] == 1
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, msg: dict[str, Any]) -> None:
        self.raw(json.dumps(msg).encode() + b"\n")

    def answer(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, "the server closed its output without answering"
        got: dict[str, Any] = json.loads(line)
        return got

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        self.proc.stdout.close()


def _call(wire: _Wire, rid: int, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    wire.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": tool, "arguments": args}})
    got = wire.answer()
    assert got["id"] == rid
    return got


def test_unreadable_lines_get_json_rpc_errors_and_the_session_goes_on(gateway: Any) -> None:
    wire = _Wire(gateway)
    try:
        for bad in (b"this is not json\n", b'{"jsonrpc": "2.0", "id": \n', b"\xff\xfe\x00garbage\n", b"[1, 2\n"):
            wire.raw(bad)
            got = wire.answer()
            assert got["id"] is None and got["error"]["code"] == -32700, (bad, got)
        for bad_msg, rid in (([1, 2, 3], None), ({"hello": "world"}, None), ({"jsonrpc": "1.0", "id": 7}, 7)):
            wire.raw(json.dumps(bad_msg).encode() + b"\n")
            got = wire.answer()
            assert got["error"]["code"] == -32600 and got["id"] == rid, (bad_msg, got)
        wire.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        listed = wire.answer()
        assert listed["id"] == 2 and any(t["name"] == "logs" for t in listed["result"]["tools"])
    finally:
        wire.close()


def test_count_arguments_below_one_are_a_clear_tool_error(gateway: Any) -> None:
    wire = _Wire(gateway)
    try:
        sub = _call(wire, 10, "submit", {"command": "sh -c 'echo one; echo two'"})
        job = json.loads(sub["result"]["content"][0]["text"])["job"]["id"]
        cases = [
            ("logs", {"job_id": job, "tail": -1}, "tail"),
            ("logs", {"job_id": job, "tail": 0}, "tail"),
            ("queue", {"limit": -5}, "limit"),
            ("memory_search", {"query": "oom", "limit": 0}, "limit"),
            ("fs", {"op": "find", "args": ["."], "limit": -1}, "limit"),
        ]
        for n, (tool, args, name) in enumerate(cases, start=11):
            got = _call(wire, n, tool, args)["result"]
            text = got["content"][0]["text"]
            assert got["isError"] is True and f"{name}: expected" in text, (tool, args, got)
            assert "\n" not in text
        wait = _call(wire, 30, "wait", {"job_ids": [job], "timeout_s": 60})["result"]
        assert "COMPLETED" in wait["content"][0]["text"]
        logs = _call(wire, 31, "logs", {"job_id": job, "tail": 1})["result"]
        assert logs["content"][0]["text"] == "two"
    finally:
        wire.close()
