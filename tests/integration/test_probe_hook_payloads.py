"""Hostile hook input to the real `frontdesk hook` process against a real gateway: wrong types, NUL bytes,
bytes that are not UTF-8, nesting deep enough to break a recursive parser, hostile transcript lines. Each is one
line on stderr and exit 0 (a hook never fails the agent, never a traceback), and the session still works."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

DEEP = b"[" * 100_000 + b"]" * 100_000


def _hook(gw: Any, event: str, data: bytes) -> subprocess.CompletedProcess[bytes]:
    argv = [sys.executable, "-m", "frontdesk.cli.main", "hook", event, "--harness", "claude-code", "--budget", "1"]
    return subprocess.run(argv, env=gw.env, input=data, capture_output=True, timeout=120)


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (DEEP, "nested too deeply"),
        (b'{"session_id": "s", "x": ' + DEEP + b"}", "nested too deeply"),
        (b'{"session_id": "\xff\xfe"}', "not valid UTF-8"),
        (b'{"session_id": {"a": 1}}', "session_id must be a string"),
        (b'{"session_id": "s", "transcript_path": ["x"]}', "transcript_path must be a string"),
        (b'{"session_id": "s", "cwd": "/tmp\\u0000x"}', "cwd must be a string without NUL"),
        (b'{"session_id": "s", "stop_hook_active": "yes"}', "stop_hook_active must be true or false"),
        (b"[1, 2]", "not a JSON object"),
    ],
)
@pytest.mark.parametrize("event", ["stop", "session-start", "prompt", "plan"])
def test_hostile_input_is_one_line_and_exit_0(gateway: Any, data: bytes, why: str, event: str) -> None:
    res = _hook(gateway, event, data)
    err = res.stderr.decode()
    assert res.returncode == 0 and res.stdout == b"", err
    assert err.count("\n") == 1 and why in err and "Traceback" not in err, err


def test_hostile_plan_shapes_and_transcript_lines_leave_the_hook_working(gateway: Any, tmp_path: Path) -> None:
    sid = str(uuid.uuid4())
    good = {"type": "tool_use", "name": "TodoWrite", "input": {"todos": [{"content": "train", "status": "pending"}]}}
    lines = [
        json.dumps({"message": {"content": [good]}}),
        json.dumps({"message": {"content": [{"type": "tool_use", "name": "TodoWrite", "input": "text"}]}}),
        '{"message": {"content": [' * 2_000 + "TodoWrite",
        "[" * 20_000 + '"TodoWrite"' + "]" * 20_000,
    ]
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("\n".join(lines) + "\n")
    tool = {"session_id": sid, "cwd": str(tmp_path), "tool_name": "TodoWrite", "tool_input": [1, 2]}
    res = _hook(gateway, "plan", json.dumps(tool).encode())
    assert res.returncode == 0 and b"Traceback" not in res.stderr, res.stderr
    stop = {"session_id": sid, "cwd": str(tmp_path), "transcript_path": str(transcript), "stop_hook_active": False}
    res = _hook(gateway, "stop", json.dumps(stop).encode())
    assert res.returncode == 0 and res.stderr == b"", res.stderr
    campaign: dict[str, Any] = gateway.client.request("GET", f"/v1/sessions/{sid}/campaign")
    assert [step["text"] for step in campaign["plan"]] == ["train"], campaign


@pytest.mark.parametrize(
    "args",
    [["bogus-event"], ["stop", "--budget", "abc"], ["stop", "--flag-of-a-newer-frontdesk"], ["rewake", "--harness"]],
)
def test_a_bad_hook_command_line_fails_open(gateway: Any, args: list[str]) -> None:
    """Exit 2 would make Claude Code block every Stop with the usage text (settings of another version)."""
    argv = [sys.executable, "-m", "frontdesk.cli.main", "hook", *args]
    res = subprocess.run(argv, env=gateway.env, input=b"{}", capture_output=True, timeout=60)
    err = res.stderr.decode()
    assert res.returncode == 0 and res.stdout == b"", err
    assert err.count("\n") == 1 and err.startswith("frontdesk hook: "), err
