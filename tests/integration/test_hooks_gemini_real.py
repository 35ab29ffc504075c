"""The real Gemini CLI (npm @google/gemini-cli 0.61.0, pinned in tests/harness/node/package.json) against a
loopback stand-in of the Gemini API, with the hooks `frontdesk hooks install gemini` wrote: the harness
added as one adapter module (agents/harnesses/gemini.py, issue 11). Its AfterAgent hook holds the turn
while the session's job runs and the report reaches the model as the next prompt, exactly once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

HARNESS = Path(__file__).resolve().parents[1] / "harness"
sys.path.insert(0, str(HARNESS))

from gemini_standin import GeminiStandIn, request_text  # noqa: E402

pytestmark = [pytest.mark.harness, pytest.mark.slow]


def test_after_agent_hook_brings_the_report_to_gemini(gateway_factory: Any, gemini_bin: Path, tmp_path: Path) -> None:
    gw = gateway_factory(config="[agents]\nbatch_window_s = 0.3\n")
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(
        json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}})
    )
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    res = gw.cli("hooks", "install", "gemini", "--project", "--dir", str(project), env={"PATH": path})
    assert res.returncode == 0, res.stderr
    settings = json.loads((project / ".gemini" / "settings.json").read_text())
    assert set(settings["hooks"]) == {"SessionStart", "BeforeAgent", "AfterAgent", "SessionEnd"}
    # Gemini runs project hooks in a trusted folder (it warns once per new hook, then runs them)
    (home / ".gemini" / "trustedFolders.json").write_text(json.dumps({str(project): "TRUST_FOLDER"}))
    sid, marker, flag = str(uuid.uuid4()), f"gemini-{uuid.uuid4().hex[:8]}", tmp_path / "go"
    # what the shell tool of a session started with `gemini --session-id $FRONTDESK_SESSION` runs
    script = f"while [ ! -e '{flag}' ]; do sleep 0.1; done; echo {marker}"
    env_run = {"GEMINI_CLI": "1", "FRONTDESK_SESSION": sid}
    sub = gw.cli("run", "--name", "gm", "--", "sh", "-c", script, env=env_run)
    job = sub.stdout.strip()
    assert sub.returncode == 0 and job.isdigit(), sub.stderr
    script_replies = ["Submitted; I will stop here.", "Read the report; done."]
    with GeminiStandIn(script_replies, on_request=lambda n: flag.touch()) as api:  # the job ends mid-turn
        env = {**gw.env, "HOME": str(home), "PATH": path, "GEMINI_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": api.url}
        argv = [str(gemini_bin), "-p", "train it", "--session-id", sid, "-m", "gemini-2.5-pro", "-o", "json"]
        run = subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    loop = api.loop_requests
    texts = [request_text(b) for b in loop]
    assert len(loop) == 2, [t[-300:] for t in texts]
    assert marker not in texts[0]
    assert f"[frontdesk] job you submitted ended: {job} (gm) COMPLETED" in texts[1] and marker in texts[1]
    s = gw.client.request("GET", f"/v1/sessions/{sid}")
    assert s["harness"] == "gemini" and s["unread"] == 0 and s["last_channel"] == "hooks:Stop"
