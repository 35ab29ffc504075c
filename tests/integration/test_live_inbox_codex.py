"""The Codex live channel with the real Codex binary and its app-server daemon, offline.

A stand-in for the Responses API on loopback; `codex exec` makes a thread; a job submitted with that
thread's CODEX_THREAD_ID (as a command run by Codex's shell tool inherits it) ends; the gateway queues
the report on the thread with `codex queue --resume`, and the daemon resumes the thread: the report
reaches the model in a new request with nothing typed, exactly once.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "harness"))

from live.responses_standin import ResponsesStandIn, input_text  # noqa: E402

pytestmark = [pytest.mark.harness, pytest.mark.timeout(300)]  # a real agent under a loaded CI machine

CODEX_VERSION = "0.171.0"
NODE_DIR = Path(__file__).resolve().parents[1] / "harness" / "node"
CODEX = NODE_DIR / "node_modules" / ".bin" / "codex"


def _ensure_codex() -> str | None:
    if CODEX.exists():
        got = subprocess.run([str(CODEX), "--version"], capture_output=True, text=True, timeout=60)
        if CODEX_VERSION in got.stdout:
            return None
    if shutil.which("npm") is None:
        return "npm is not installed"
    res = subprocess.run(
        ["npm", "install", "--prefix", str(NODE_DIR), "--no-audit", "--no-fund", f"@openai/codex@{CODEX_VERSION}"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    return None if res.returncode == 0 and CODEX.exists() else "npm install @openai/codex failed"


def _stop_leftovers(root: Path) -> None:
    """SIGTERM the processes this test started from its own CODEX_HOME (found by that unique path)."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if str(root).encode() in cmd:
            try:
                os.kill(int(proc.name), 15)
            except OSError:
                pass


@pytest.fixture
def codex_home() -> Iterator[tuple[dict[str, str], ResponsesStandIn, Path]]:
    """(environment for codex and the gateway, the Responses stand-in, the project directory)."""
    why = _ensure_codex()
    if why is not None:
        pytest.skip(why)
    api = ResponsesStandIn().start()
    root = Path(tempfile.mkdtemp(prefix="fd-codex-", dir="/var/tmp"))  # the daemon avoids /tmp homes
    (root / "home" / ".codex").mkdir(parents=True)
    (root / "project").mkdir()
    (root / "home" / ".codex" / "config.toml").write_text(
        f'model = "gpt-standin"\nmodel_provider = "standin"\n[model_providers.standin]\nname = "standin"\n'
        f'base_url = "{api.url}"\nwire_api = "responses"\nenv_key = "STANDIN_API_KEY"\n'
    )
    env = {
        "HOME": str(root / "home"),
        "CODEX_HOME": str(root / "home" / ".codex"),
        "STANDIN_API_KEY": "k",
        "PATH": f"{CODEX.parent}:{os.environ['PATH']}",
    }
    yield env, api, root / "project"
    subprocess.run(
        [str(CODEX), "app-server", "daemon", "stop"], env={**os.environ, **env}, capture_output=True, timeout=60
    )
    _stop_leftovers(root)  # `daemon stop` leaves its pid-update-loop helper running
    api.stop()
    shutil.rmtree(root, ignore_errors=True)


def test_codex_thread_gets_the_report_through_queue_resume(codex_home: Any, gateway_factory: Any) -> None:
    env, api, project = codex_home
    full = {**os.environ, **env}
    for key in ("CODEX_THREAD_ID", "CODEX_SESSION_ID", "CLAUDECODE", "CLAUDE_CODE_SESSION_ID"):
        full.pop(key, None)
    made = subprocess.run(
        [str(CODEX), "exec", "--skip-git-repo-check", "--json", "hello"],
        env=full,
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert made.returncode == 0, made.stderr[-2000:]
    thread = next(
        json.loads(x)["thread_id"]
        for x in made.stdout.splitlines()
        if x.startswith("{") and json.loads(x).get("type") == "thread.started"
    )
    up = subprocess.run(
        [str(CODEX), "app-server", "daemon", "start"], env=full, capture_output=True, text=True, timeout=90
    )
    assert up.returncode == 0, up.stderr[-2000:]
    gw = gateway_factory(
        config=f'[agents]\nchannels = ["codex_live", "hooks"]\nbatch_window_s = 0.5\ncodex_bin = "{CODEX}"\n',
        env={**env, "FRONTDESK_PLUGINS": "agents"},
    )
    res = gw.cli(
        "run",
        "--json",
        "--name",
        "cx",
        "--",
        "sh",
        "-c",
        "sleep 1; echo codex-result-7",
        env={"CODEX_THREAD_ID": thread},
    )
    assert res.returncode == 0, res.stderr
    job = int(json.loads(res.stdout)["id"])
    before = len(api.seen)
    gw.wait_state(job, {"COMPLETED"}, timeout=30)
    body = api.wait_for(lambda b: "codex-result-7" in input_text(b), 60, after=before)
    assert "sent by frontdesk" in input_text(body)
    deadline = time.monotonic() + 60
    while gw.client.request("GET", f"/v1/sessions/{thread}")["last_channel"] != "codex_live":
        assert time.monotonic() < deadline
        time.sleep(0.2)
    time.sleep(2)
    hits = [b for _, b in api.seen[before:] if "codex-result-7" in input_text(b)]
    assert len(hits) == 1
    view = gw.client.request("GET", f"/v1/sessions/{thread}")
    assert view["harness"] == "codex" and view["unread"] == 0
