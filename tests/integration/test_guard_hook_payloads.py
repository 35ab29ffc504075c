"""`frontdesk guard hook` on payloads that are not Claude Code's usual shape: a shell tool whose command cannot
be read is asked about (never waved through), argv lists and Codex's `cmd` are checked like a command string,
and a broken payload says what is wrong in one line. Commands are canaries (`mkfs.ext4` on a missing device)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

CANARY = "mkfs.ext4 /dev/fd-does-not-exist-canary"


def _hook(home: Path, raw: str) -> dict[str, Any]:
    env = {**os.environ, "FRONTDESK_HOME": str(home), "FRONTDESK_NO_AUTOSTART": "1"}
    for key in ("FRONTDESK_NODE_ROLE", "SLURM_JOB_ID", "FRONTDESK_CONFIG", "FRONTDESK_SOCKET", "FRONTDESK_URL"):
        env.pop(key, None)
    res = subprocess.run(
        [sys.executable, "-m", "frontdesk.cli.main", "guard", "hook"],
        env=env,
        input=raw,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    answer: dict[str, Any] = json.loads(res.stdout)
    return answer


def _decision(answer: dict[str, Any]) -> tuple[str, str]:
    out = answer.get("hookSpecificOutput") or {}
    return str(out.get("permissionDecision", "none")), str(out.get("permissionDecisionReason", ""))


@pytest.mark.parametrize(
    "tool_input",
    [
        {"command": ["bash", "-lc", CANARY]},  # an argv list
        {"cmd": CANARY},  # Codex's exec_command argument
        {"cmd": ["bash", "-lc", CANARY]},
    ],
    ids=["argv-list", "codex-cmd", "codex-cmd-list"],
)
def test_other_shapes_of_a_shell_command_are_checked(tmp_path: Path, tool_input: dict[str, Any]) -> None:
    for tool in ("Bash", "exec_command", "shell"):
        got = _decision(
            _hook(tmp_path, json.dumps({"tool_name": tool, "tool_input": tool_input, "cwd": str(tmp_path)}))
        )
        assert got[0] == "deny" and "disk.wipe" in got[1], (tool, got)


@pytest.mark.parametrize(
    ("payload", "says"),
    [
        ({"tool_name": "Bash", "tool_input": CANARY}, "no command"),
        ({"tool_name": "Bash", "tool_input": {"command": 5}}, "no command"),
        ({"tool_name": "Bash", "tool_input": {}}, "no command"),
        (None, "not a JSON object"),
        ([], "not a JSON object"),
    ],
)
def test_a_shell_payload_that_cannot_be_read_is_asked_about_with_a_reason(
    tmp_path: Path, payload: Any, says: str
) -> None:
    decision, reason = _decision(_hook(tmp_path, json.dumps(payload)))
    assert decision == "ask" and says in reason and "\n" not in reason, reason


def test_other_tools_and_an_empty_payload_get_no_opinion(tmp_path: Path) -> None:
    assert _hook(tmp_path, json.dumps({"tool_name": "Read", "tool_input": {"file_path": "/etc/hostname"}})) == {}
    assert _hook(tmp_path, "") == {}
    truncated = json.dumps({"tool_name": "Bash", "tool_input": {"command": CANARY}})[:-3]
    decision, reason = _decision(_hook(tmp_path, truncated))
    assert decision == "ask" and "JSON" in reason
