"""The guard's CLI and PreToolUse hook run as fresh processes for one test's temp directory.

Nothing here runs a checked command: `guard check` and `guard hook` only judge it. HOME is `<tmp>/home`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["guard_check", "guard_env", "guard_hook"]


def guard_env(tmp: Path) -> dict[str, str]:
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    env = {**os.environ, "FRONTDESK_HOME": str(tmp / "fd"), "HOME": str(home), "FRONTDESK_NO_AUTOSTART": "1"}
    for key in ("FRONTDESK_NODE_ROLE", "SLURM_JOB_ID", "FRONTDESK_CONFIG", "FRONTDESK_SOCKET", "FRONTDESK_URL"):
        env.pop(key, None)
    env["FRONTDESK_NODE_ROLE"] = "workstation"  # no first-answer notice about an unknown role
    return env


def guard_check(tmp: Path, command: str) -> tuple[int, dict[str, Any]]:
    res = subprocess.run(
        [sys.executable, "-m", "frontdesk.cli.main", "guard", "check", "--json", command],
        env=guard_env(tmp),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=str(tmp),
    )
    assert res.returncode in (0, 1, 2), res.stderr
    return res.returncode, json.loads(res.stdout)


def guard_hook(tmp: Path, command: str) -> dict[str, Any]:
    payload = {"tool_name": "Bash", "tool_input": {"command": command}, "cwd": str(tmp)}
    res = subprocess.run(
        [sys.executable, "-m", "frontdesk.cli.main", "guard", "hook"],
        env=guard_env(tmp),
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=str(tmp),
    )
    assert res.returncode == 0, res.stderr
    return dict(json.loads(res.stdout or "{}"))
