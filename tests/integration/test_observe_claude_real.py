"""`frontdesk observe` beside the real Claude Code and Codex binaries: a command Claude's Bash tool runs, and
a hook command Codex runs, are attributed to their harness, with the real binary in the recorded ancestry."""

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
from live.responses_standin import ResponsesStandIn  # noqa: E402

CODEX = HARNESS / "node" / "node_modules" / ".bin" / "codex"

pytestmark = [pytest.mark.harness, pytest.mark.slow]


@pytest.mark.usefixtures("harness_node")
def test_a_command_claude_runs_is_attributed_to_claude_code(tmp_path: Path) -> None:
    pidfile = tmp_path / "sleep.pid"
    db = tmp_path / "observe.db"
    project = tmp_path / "project"
    project.mkdir()
    script = [("bash", f"sleep 3.5 & echo $! > {pidfile}; wait"), ("text", "done")]
    observer = _observer(db)
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
        _stop(observer)
    actor, harness, ancestry, cwd = _row(db, int(pidfile.read_text()))
    assert (actor, harness) == ("agent", "claude-code")
    assert "claude" in ancestry
    assert cwd == str(project)


def _observer(db: Path) -> subprocess.Popen[str]:
    exe = Path(sys.executable).parent / "frontdesk"
    return subprocess.Popen(
        [str(exe), "observe", "--duration", "120", "--out", str(db), "--json"], stdout=subprocess.PIPE, text=True
    )


def _stop(observer: subprocess.Popen[str]) -> None:
    observer.terminate()  # SIGTERM: the run ends cleanly and is stored
    out, _ = observer.communicate(timeout=30)
    assert observer.returncode == 0
    assert json.loads(out)["ticks"] > 0


def _row(db: Path, pid: int) -> tuple[str, str, list[str], str]:
    row = sqlite3.connect(db).execute("SELECT actor, harness, ancestry, cwd FROM processes WHERE pid = ?", (pid,))
    actor, harness, ancestry, cwd = row.fetchone()
    return actor, harness, json.loads(ancestry), cwd


@pytest.mark.usefixtures("harness_node")
def test_a_hook_codex_runs_is_attributed_to_codex(tmp_path: Path) -> None:
    pidfile, db = tmp_path / "hook.pid", tmp_path / "observe.db"
    home, project = tmp_path / "home", tmp_path / "project"
    (home / ".codex").mkdir(parents=True)
    (project / ".codex").mkdir(parents=True)
    hook = {"type": "command", "command": f"sh -c 'echo $$ > {pidfile}; sleep 2'", "timeout": 60}
    (project / ".codex" / "hooks.json").write_text(json.dumps({"hooks": {"SessionStart": [{"hooks": [hook]}]}}))
    api = ResponsesStandIn().start()
    observer = _observer(db)
    try:
        (home / ".codex" / "config.toml").write_text(
            f'model = "gpt-standin"\nmodel_provider = "standin"\n[model_providers.standin]\nname = "standin"\n'
            f'base_url = "{api.url}"\nwire_api = "responses"\nenv_key = "STANDIN_API_KEY"\n'
        )
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(home),
            "CODEX_HOME": str(home / ".codex"),
            "STANDIN_API_KEY": "k",
        }
        argv = [str(CODEX), "exec", "--trust", "--dangerously-bypass-hook-trust", "--skip-git-repo-check"]
        run = subprocess.run(
            [*argv, "--sandbox", "danger-full-access", "hello"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
            stdin=subprocess.DEVNULL,
        )
        assert run.returncode == 0, run.stderr[-2000:]
    finally:
        api.stop()
        _stop(observer)
    actor, harness, ancestry, cwd = _row(db, int(pidfile.read_text()))
    assert (actor, harness) == ("agent", "codex")
    assert "codex" in ancestry
