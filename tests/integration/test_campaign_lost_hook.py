"""Issue 18: a UserPromptSubmit hook lost while the gateway is down shifts no turn number (real Claude Code 2.1.332
against the loopback stand-in, a real gateway killed -9). Turn 1 submits a job; the gateway is killed; turn 2
starts (its prompt hook fails open: nobody listens), the gateway comes back, turn 2 submits a job and the harness is
killed -9 in it. The job keys carry the true turn numbers, and the resume replays turn 2: its submission gets the
key it got the first time, so it returns the job it made and nothing runs twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "harness"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from anthropic_standin import MessagesStandIn  # noqa: E402
from test_campaign_resume import TOOLS, _env, _job_ids, _until  # noqa: E402

pytestmark = [pytest.mark.harness, pytest.mark.slow]

UP = "until frontdesk jobs >/dev/null 2>&1; do sleep 0.2; done; "  # the tool call waits for the gateway
RUN = "frontdesk run --name {name} -- sh -c 'echo {name} >> {runs}'"


def _claude(binary: Path, prompt: str, sid: str | None) -> list[str]:
    argv = [str(binary), "-p", prompt, "--allowedTools", TOOLS, "--output-format", "json"]
    return argv + (["--resume", sid] if sid else [])


def test_a_prompt_hook_lost_while_the_gateway_is_down_shifts_no_turn(
    gateway_factory: Any,
    claude_bin: Path,
    tmp_path: Path,
) -> None:
    gw = gateway_factory(config=f'[agents]\nchannels = ["hooks"]\nclaude_bin = "{claude_bin}"\n')
    project, home, runs = tmp_path / "proj", tmp_path / "home", tmp_path / "runs.txt"
    project.mkdir()
    home.mkdir()
    assert gw.cli("hooks", "install", "claude", "--project", "--dir", str(project), "--no-guard").returncode == 0
    with MessagesStandIn([("bash", RUN.format(name="a", runs=runs)), ("text", "a submitted")]) as api:
        one = subprocess.run(
            _claude(claude_bin, "turn one", None),
            cwd=project, env=_env(gw, api.url, home), capture_output=True, text=True, timeout=180,
        )  # fmt: skip
    assert one.returncode == 0, one.stderr[-2000:]
    sid = json.loads(one.stdout)["session_id"]
    assert gw.client.request("GET", f"/v1/sessions/{sid}/campaign")["turn"] == 1

    gw.kill9()  # turn 2's prompt hook runs while nobody listens: it fails open and is lost
    second = UP + RUN.format(name="b", runs=runs)
    with (
        MessagesStandIn([("bash", second), ("bash", "sleep 600")], first_id=10) as api,
        open(tmp_path / "claude.log", "wb") as log,
    ):
        proc = subprocess.Popen(
            _claude(claude_bin, "turn two", sid),
            cwd=project, env=_env(gw, api.url, home), stdout=subprocess.DEVNULL, stderr=log, start_new_session=True,
        )  # fmt: skip
        try:
            _until(lambda: len(api.loop_requests) >= 1 or proc.poll() is not None, 180, "turn 2's first request")
            gw.start()  # back while turn 2's tool call waits for it
            _until(lambda: len(api.loop_requests) >= 2 or proc.poll() is not None, 180, "turn 2's submission")
            assert proc.poll() is None, (tmp_path / "claude.log").read_text()[-2000:]
            submitted = _job_ids(MessagesStandIn.last_user_text(api.loop_requests[1]))
        finally:
            os.killpg(proc.pid, signal.SIGKILL)  # mid-turn 2, before any other hook of it
            proc.wait()
    gw.kill9()
    gw.start()
    camp = gw.client.request("GET", f"/v1/sessions/{sid}/campaign")
    keys = {j["name"]: j["idempotency_key"] for j in camp["jobs"]}
    jobs = {j["name"]: j["id"] for j in camp["jobs"]}
    assert ":turn1:" in keys["a"] and ":turn2:" in keys["b"], keys  # the true turn numbers, not shifted
    # Turn 2 is opened by its submission (turn_inferred) or by another hook of turn 2 carrying its prompt id,
    # whichever reaches the restarted gateway first: both give it its true number.
    assert submitted == [jobs["b"]] and camp["turn"] == 2, camp
    gw.wait_state(jobs["b"], {"COMPLETED"}, timeout=60)

    with MessagesStandIn([("bash", second), ("text", "b is done.")], first_id=100) as api2:
        res = subprocess.run(
            [sys.executable, "-m", "frontdesk.cli.main", "sessions", "resume", sid, "--headless",
             "--harness-args", f"--allowedTools {TOOLS}"],
            env=_env(gw, api2.url, home), capture_output=True, text=True, timeout=240,
        )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    assert "stopped in the middle of its last turn" in MessagesStandIn.last_user_text(api2.loop_requests[0])
    said = MessagesStandIn.last_user_text(api2.loop_requests[1])
    assert f"job {jobs['b']}: already submitted with the same idempotency key" in said, said
    assert sorted(runs.read_text().split()) == ["a", "b"]  # nothing ran twice
    after = gw.client.request("GET", f"/v1/sessions/{sid}/campaign")
    assert after["turn"] == 2 and len(after["jobs"]) == 2, after
