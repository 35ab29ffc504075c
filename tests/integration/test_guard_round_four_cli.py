"""The guard's fourth-round classes through the real CLI and hook, as fresh processes, with real files on disk.

Safety: nothing here runs a checked command. The one script on disk is a canary (`mkfs.ext4` on a device that
does not exist), refused by the same rule as a real wipe and harmless if it ran; HOME is a temp directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

CANARY = "mkfs.ext4 /dev/fd-does-not-exist-canary"


def _env(tmp: Path) -> dict[str, str]:
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    env = {**os.environ, "FRONTDESK_HOME": str(tmp / "fd"), "HOME": str(home), "FRONTDESK_NO_AUTOSTART": "1"}
    for key in ("FRONTDESK_NODE_ROLE", "SLURM_JOB_ID", "FRONTDESK_CONFIG", "FRONTDESK_SOCKET", "FRONTDESK_URL"):
        env.pop(key, None)
    env["FRONTDESK_NODE_ROLE"] = "workstation"  # no first-answer notice about an unknown role
    return env


def _check(tmp: Path, command: str) -> tuple[int, dict[str, Any]]:
    res = subprocess.run(
        [sys.executable, "-m", "frontdesk.cli.main", "guard", "check", "--json", command],
        env=_env(tmp),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=str(tmp),
    )
    assert res.returncode in (0, 1, 2), res.stderr
    return res.returncode, json.loads(res.stdout)


def _hook(tmp: Path, command: str) -> dict[str, Any]:
    payload = {"tool_name": "Bash", "tool_input": {"command": command}, "cwd": str(tmp)}
    res = subprocess.run(
        [sys.executable, "-m", "frontdesk.cli.main", "guard", "hook"],
        env=_env(tmp),
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=str(tmp),
    )
    assert res.returncode == 0, res.stderr
    return dict(json.loads(res.stdout or "{}"))


def test_a_container_acting_on_a_mounted_home_is_denied(tmp_path: Path) -> None:
    code, out = _check(tmp_path, "docker run --rm -v ~:/h alpine rm -rf /h")
    assert (code, out["rule"]) == (2, "fs.rm-root"), out
    code, out = _check(tmp_path, 'docker run --rm -v "$PWD":/work -w /work python:3.12 python train.py')
    assert code == 0, out


def test_a_script_named_by_a_crontab_the_line_writes_is_read_from_disk(tmp_path: Path) -> None:
    script = tmp_path / "nightly.sh"
    script.write_text(f"#!/bin/bash\n{CANARY}\n")
    table = tmp_path / "table"
    code, out = _check(tmp_path, f"echo '0 3 * * * bash {script}' > {table}; crontab {table}")
    assert (code, out["rule"]) == (2, "disk.wipe"), out
    script.write_text("#!/bin/bash\necho nightly\n")
    code, out = _check(tmp_path, f"echo '0 3 * * * bash {script}' > {table}; crontab {table}")
    assert code != 2 and "disk.wipe" not in out["matches"], out  # (a script under /tmp still asks)


def test_the_hook_reads_here_strings_after_a_redirection(tmp_path: Path) -> None:
    assert _hook(tmp_path, "cat > notes.txt <<< 'hello'") == {}  # allow: no opinion (was a parse-error ask)
    answer = _hook(tmp_path, f"bash 2>&1 <<< '{CANARY}'")["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny" and "disk.wipe" in answer["permissionDecisionReason"]


def test_listed_entries_and_emptied_files_through_the_hook(tmp_path: Path) -> None:
    answer = _hook(tmp_path, "ls ~ | xargs -I{} rm -rf ~/{}")["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny" and "fs.rm-root" in answer["permissionDecisionReason"]
    answer = _hook(tmp_path, "truncate -s 0 ~/data/*")["hookSpecificOutput"]
    assert answer["permissionDecision"] == "ask" and "fs.rm-wide" in answer["permissionDecisionReason"]
    answer = _hook(tmp_path, "emacs --batch --eval '(shell-command \"rm -rf ~\")'")["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny" and "fs.rm-root" in answer["permissionDecisionReason"]
