"""The real Claude Code binary with the hooks `frontdesk hooks install claude` writes: after a recursive grep
over a shared filesystem, the guard's PostToolUse hook adds one line to the model's context suggesting
`frontdesk fs grep`, once per session and command kind; the command itself runs untouched.

The shared filesystem is named by `FRONTDESK_FS_HINT_PREFIXES` (the filesystem-type detection from
/proc/self/mounts is unit-tested in tests/unit/storage/test_hint.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "harness"))

from anthropic_standin import MessagesStandIn  # noqa: E402
from test_hooks_claude_real import _claude_env  # noqa: E402

pytestmark = [pytest.mark.harness, pytest.mark.slow]


def _all_text(body: dict[str, Any]) -> str:
    return json.dumps(body.get("messages", []))


def test_a_recursive_grep_on_a_shared_tree_gets_one_note_per_session(
    gateway_factory: Any, claude_bin: Path, tmp_path: Path
) -> None:
    gw = gateway_factory()
    project, tree = tmp_path / "project", tmp_path / "shared"
    project.mkdir()
    (tree / "logs").mkdir(parents=True)
    (tree / "logs" / "run.log").write_text("step 1\nCUDA out of memory\n")
    res = gw.cli("hooks", "install", "claude", "--project", "--dir", str(project))
    assert res.returncode == 0, res.stderr
    script = [
        ("bash", f"grep -rn 'CUDA out' {tree}"),
        ("bash", f"grep -rn 'step 1' {tree}"),
        ("bash", f"find {tree} -name '*.log'"),
        ("text", "done"),
    ]
    with MessagesStandIn(script) as api:
        env = {**_claude_env(gw.env, api.url, tmp_path), "FRONTDESK_FS_HINT_PREFIXES": str(tree)}
        argv = [str(claude_bin), "-p", "look for OOMs", "--allowedTools", "Bash", "--output-format", "json"]
        run = subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-2000:]
    loop = api.loop_requests
    assert len(loop) == 4, [MessagesStandIn.last_user_text(b)[:200] for b in loop]
    grep_note = f"frontdesk: that grep walked {tree} on a shared filesystem (under {tree})"
    assert f"{tree}/logs/run.log:2:CUDA out of memory" in MessagesStandIn.last_user_text(loop[1])  # it ran
    assert grep_note not in _all_text(loop[0])
    assert grep_note in _all_text(loop[1])
    assert "frontdesk fs grep -n 'CUDA out'" in _all_text(loop[1])
    assert _all_text(loop[2]).count(grep_note) == 1  # the second grep of the session: no new note
    assert f"{tree}/logs/run.log:1:step 1" in MessagesStandIn.last_user_text(loop[2])
    assert f"frontdesk: that find walked {tree}" in _all_text(loop[3])  # another kind: its own note
