"""`frontdesk observe` beside the real Claude Code binary: a command its Bash tool runs is attributed to
Claude Code, with the real `claude` process in its recorded ancestry."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

HARNESS = Path(__file__).resolve().parents[1] / "harness"
CLAUDE = HARNESS / "node" / "node_modules" / ".bin" / "claude"
sys.path.insert(0, str(HARNESS))

from anthropic_standin import MessagesStandIn  # noqa: E402

pytestmark = [pytest.mark.harness, pytest.mark.slow]


@pytest.mark.skipif(not CLAUDE.exists(), reason="tests/harness/node has no claude (npm ci --prefix tests/harness/node)")
def test_a_command_claude_runs_is_attributed_to_claude_code(tmp_path: Path) -> None:
    pidfile = tmp_path / "sleep.pid"
    db = tmp_path / "observe.db"
    project = tmp_path / "project"
    project.mkdir()
    script = [("bash", f"sleep 3.5 & echo $! > {pidfile}; wait"), ("text", "done")]
    observer = subprocess.Popen(
        [str(Path(sys.executable).parent / "frontdesk"), "observe", "--duration", "120", "--out", str(db), "--json"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        with MessagesStandIn(script) as api:
            env = {
                "PATH": os.environ["PATH"],
                "HOME": str(tmp_path / "home"),
                "ANTHROPIC_BASE_URL": api.url,
                "ANTHROPIC_API_KEY": "sk-test",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            }
            run = subprocess.run(
                [str(CLAUDE), "-p", "sleep a bit", "--allowedTools", "Bash", "--output-format", "json"],
                cwd=project,
                env=env,
                capture_output=True,
                text=True,
                timeout=240,
            )
        assert run.returncode == 0, run.stderr[-2000:]
    finally:
        observer.terminate()  # SIGTERM: the run ends cleanly and is stored
        out, _ = observer.communicate(timeout=30)
    assert observer.returncode == 0
    assert json.loads(out)["ticks"] > 0
    pid = int(pidfile.read_text())
    row = sqlite3.connect(db).execute("SELECT actor, harness, ancestry, cwd FROM processes WHERE pid = ?", (pid,))
    actor, harness, ancestry, cwd = row.fetchone()
    assert (actor, harness) == ("agent", "claude-code")
    assert "claude" in json.loads(ancestry)
    assert cwd == str(project)
