"""The hook handlers driven exactly as Claude Code / Codex run them: JSON on stdin, env, exit code, output.

Each test runs a real gateway and the real `frontdesk hook <event>` process; jobs run on the embedded
backend. Shapes follow the Claude Code hooks reference (Stop `decision: block`, asyncRewake exit 2 with
stderr, `hookSpecificOutput.additionalContext`) and Codex's hooks.json (same Stop/SessionStart shapes).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

PY = sys.executable
CONFIG = "[agents]\nbatch_window_s = 0.5\nlease_s = 5\n"


@pytest.fixture
def gw(gateway_factory: Any) -> Any:
    return gateway_factory(config=CONFIG)


def _sid() -> str:
    return str(uuid.uuid4())


def hook(
    gw: Any,
    event: str,
    payload: dict[str, Any],
    *args: str,
    harness: str = "claude-code",
    env: dict[str, str] | None = None,
    background: bool = False,
) -> Any:
    argv = [PY, "-m", "frontdesk.cli.main", "hook", event, "--harness", harness, *args]
    full_env = {**gw.env, **(env or {})}
    if background:
        p = subprocess.Popen(
            argv, env=full_env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert p.stdin is not None
        p.stdin.write(json.dumps(payload))
        p.stdin.close()
        p.stdin = None  # communicate() must not flush it again
        return p
    return subprocess.run(argv, env=full_env, input=json.dumps(payload), capture_output=True, text=True, timeout=120)


def stop_payload(sid: str, active: bool = False) -> dict[str, Any]:
    return {
        "session_id": sid,
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/tmp",
        "hook_event_name": "Stop",
        "stop_hook_active": active,
        "last_assistant_message": "submitted the job",
        "background_tasks": [],
    }


def start_payload(sid: str, event: str = "SessionStart") -> dict[str, Any]:
    p = {"session_id": sid, "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp", "hook_event_name": event}
    p.update({"source": "resume"} if event == "SessionStart" else {"prompt": "carry on"})
    return p


def submit(gw: Any, sid: str, script: str, name: str | None = None) -> int:
    args = ["run", "--json", *(["--name", name] if name else []), "--", "sh", "-c", script]
    res = gw.cli(*args, env={"CLAUDE_CODE_SESSION_ID": sid, "CLAUDECODE": "1"})
    assert res.returncode == 0, res.stderr
    return int(json.loads(res.stdout)["id"])


def session(gw: Any, sid: str) -> dict[str, Any]:
    got: dict[str, Any] = gw.client.request("GET", f"/v1/sessions/{sid}")
    return got


def test_stop_hook_blocks_while_the_job_runs_and_releases_with_the_report(gw: Any) -> None:
    sid = _sid()
    job = submit(gw, sid, "sleep 2; echo result-42", name="train")
    p = hook(gw, "stop", stop_payload(sid), "--budget", "60", background=True)
    time.sleep(1.0)
    assert p.poll() is None  # holding the turn while the job runs: no tokens spent
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    answer = json.loads(out)
    assert answer["decision"] == "block"
    assert answer["reason"].startswith(f"[frontdesk] job you submitted ended: {job} (train) COMPLETED.")
    assert "result-42" in answer["reason"]
    s = session(gw, sid)
    assert s["unread"] == 0 and s["turn_state"] == "in_turn" and s["harness"] == "claude-code"
    # the harness continues, then stops again with stop_hook_active: nothing left, it may stop
    again = hook(gw, "stop", stop_payload(sid, active=True))
    assert (again.returncode, again.stdout) == (0, "")
    assert session(gw, sid)["turn_state"] == "idle"


def test_stop_hook_with_nothing_running_returns_at_once(gw: Any) -> None:
    t0 = time.monotonic()
    res = hook(gw, "stop", stop_payload(_sid()), "--budget", "600")
    assert (res.returncode, res.stdout) == (0, "")
    assert time.monotonic() - t0 < 60  # not the 600 s budget (a margin a loaded machine's CLI start fits in)


def test_stop_hook_active_does_not_wait_again(gw: Any) -> None:
    sid = _sid()
    submit(gw, sid, "sleep 300")
    t0 = time.monotonic()
    res = hook(gw, "stop", stop_payload(sid, active=True), "--budget", "600")
    assert (res.returncode, res.stdout) == (0, "")
    assert time.monotonic() - t0 < 60  # not until the job's end (300 s) nor the budget


def test_async_rewake_hook_exits_2_with_the_report_on_stderr(gw: Any) -> None:
    sid = _sid()
    job = submit(gw, sid, "sleep 2; echo woke-up")
    # the turn ends without waiting (budget 0), the background hook stays
    stop = hook(gw, "stop", stop_payload(sid), "--budget", "0")
    assert (stop.returncode, stop.stdout) == (0, "")
    rewake = hook(gw, "rewake", stop_payload(sid), "--budget", "60")
    assert rewake.returncode == 2
    assert rewake.stdout == ""
    assert rewake.stderr.startswith(f"[frontdesk] job you submitted ended: {job} COMPLETED.")
    assert "woke-up" in rewake.stderr
    assert session(gw, sid)["unread"] == 0


def test_rewake_with_nothing_running_exits_0_at_once(gw: Any) -> None:
    res = hook(gw, "rewake", stop_payload(_sid()), "--budget", "600")
    assert (res.returncode, res.stdout, res.stderr) == (0, "", "")


def test_session_start_injects_a_report_that_arrived_while_away_exactly_once(gw: Any) -> None:
    sid = _sid()
    job = submit(gw, sid, "echo while-you-were-away")
    gw.wait_state(job, {"COMPLETED"})
    deadline = time.monotonic() + 60  # the report reaches the session after the job's end
    while session(gw, sid)["unread"] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    res = hook(gw, "session-start", start_payload(sid))
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert list(out) == ["hookSpecificOutput"]
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "while-you-were-away" in out["hookSpecificOutput"]["additionalContext"]
    # delivered once: the next prompt does not repeat it
    again = hook(gw, "prompt", start_payload(sid, "UserPromptSubmit"))
    assert (again.returncode, again.stdout) == (0, "")
    wakes = [e for e in gw.client.events(since=0) if e["kind"] == "session.wake" and e["session"] == sid]
    assert [(w["data"]["jobs"], w["data"]["ok"]) for w in wakes] == [([job], True)]


def test_session_start_writes_the_session_into_claude_env_file(gw: Any, tmp_path: Path) -> None:
    sid = _sid()
    env_file = tmp_path / "env.sh"
    res = hook(gw, "session-start", start_payload(sid), env={"CLAUDE_ENV_FILE": str(env_file)})
    assert res.returncode == 0
    assert env_file.read_text() == f"export FRONTDESK_SESSION={sid}\n"


def test_prompt_hook_shows_the_queue_in_one_line(gw: Any) -> None:
    sid = _sid()
    job = submit(gw, sid, "sleep 20", name="sweep")
    res = hook(gw, "prompt", start_payload(sid, "UserPromptSubmit"))
    ctx = json.loads(res.stdout)["hookSpecificOutput"]["additionalContext"]
    assert ctx.startswith(f"frontdesk: 1 active ({job} sweep ")
    assert session(gw, sid)["turn_state"] == "in_turn"
    gw.cli("cancel", str(job))


def test_jobs_ending_close_together_arrive_as_one_block(gateway_factory: Any) -> None:
    gw = gateway_factory(config="[agents]\nbatch_window_s = 1.5\n")
    sid = _sid()
    a = submit(gw, sid, "sleep 1.5; echo A")
    b = submit(gw, sid, "sleep 1.7; echo B")
    p = hook(gw, "stop", stop_payload(sid), "--budget", "60", background=True)
    out, err = p.communicate(timeout=60)
    reason = json.loads(out)["reason"]
    assert reason.startswith(f"[frontdesk] 2 jobs you submitted ended: {a} COMPLETED, {b} COMPLETED.")


def test_codex_stop_hook_uses_the_same_block_shape(gw: Any) -> None:
    sid = _sid()
    res = gw.cli("run", "--json", "--", "sh", "-c", "sleep 1; echo codex-done", env={"CODEX_THREAD_ID": sid})
    job = json.loads(res.stdout)["id"]
    payload = {
        "session_id": sid,
        "turn_id": "t1",
        "cwd": "/tmp",
        "hook_event_name": "Stop",
        "model": "gpt-x",
        "stop_hook_active": False,
        "transcript_path": None,
        "last_assistant_message": "ok",
    }
    got = hook(gw, "stop", payload, "--budget", "60", harness="codex")
    answer = json.loads(got.stdout)
    assert answer["decision"] == "block" and f"{job} COMPLETED" in answer["reason"]
    assert session(gw, sid)["harness"] == "codex"


def test_codex_notify_marks_the_turn_idle(gw: Any) -> None:
    sid = _sid()
    payload = {
        "type": "agent-turn-complete",
        "thread-id": sid,
        "turn-id": "1",
        "cwd": "/tmp",
        "input-messages": ["go"],
        "last-assistant-message": "done",
    }
    res = subprocess.run(
        [PY, "-m", "frontdesk.cli.main", "hook", "notify", "--harness", "codex", json.dumps(payload)],
        env=gw.env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert (res.returncode, res.stdout) == (0, "")
    assert session(gw, sid)["turn_state"] == "idle"


def test_hooks_fail_open_when_the_gateway_is_down(gw: Any) -> None:
    gw.stop()
    res = hook(gw, "stop", stop_payload(_sid()))
    assert (res.returncode, res.stdout) == (0, "")
    assert res.stderr.startswith("frontdesk hook stop:")


def test_unread_reports_survive_a_gateway_restart(gw: Any) -> None:
    sid = _sid()
    job = submit(gw, sid, "echo persisted")
    gw.wait_state(job, {"COMPLETED"})
    deadline = time.monotonic() + 60  # the report reaches the session after the job's end
    while session(gw, sid)["unread"] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    gw.restart()
    s = session(gw, sid)
    assert s["unread"] == 1
    res = hook(gw, "session-start", start_payload(sid))
    assert "persisted" in json.loads(res.stdout)["hookSpecificOutput"]["additionalContext"]


def test_sessions_command_lists_running_and_unread(gw: Any) -> None:
    sid = _sid()
    job = submit(gw, sid, "sleep 20", name="longjob")
    res = gw.cli("sessions")
    assert res.returncode == 0
    assert sid[:13] in res.stdout and "claude-code" in res.stdout
    rows = json.loads(gw.cli("sessions", "--json").stdout)
    row = next(r for r in rows if r["id"] == sid)
    assert row["running"] == 1 and row["active_jobs"][0]["id"] == job and row["channel"] is None
    assert any(c.startswith("hooks: no hook waiting") for c in row["channels"])
    gw.cli("cancel", str(job))


def test_hooks_install_and_uninstall_through_the_cli(gw: Any, tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    (proj / ".claude").mkdir(parents=True)
    settings = proj / ".claude" / "settings.json"
    original = '{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}'
    settings.write_text(original)
    res = gw.cli("hooks", "install", "claude", "--project", "--dir", str(proj), "--json")
    assert res.returncode == 0, res.stderr
    data = json.loads(settings.read_text())
    assert len(data["hooks"]["Stop"]) == 2 and "SessionStart" in data["hooks"]
    assert gw.cli("hooks", "uninstall", "claude", "--dir", str(proj)).returncode == 0
    assert settings.read_text() == original


def test_a_session_is_read_and_woken_only_by_its_own_user(gateway_factory: Any) -> None:
    import socket

    from frontdesk.client import Client

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = f'[gateway]\ntoken = "owner-token"\n[gateway.tokens]\nbob-token = "bob"\n{CONFIG}'
    gw = gateway_factory(config=config, args=["--listen", f"127.0.0.1:{port}"])
    sid = _sid()
    job = submit(gw, sid, "echo private-result")  # over the socket: the gateway's own user
    gw.wait_state(job, {"COMPLETED"})
    bob = Client(url=f"http://127.0.0.1:{port}", token="bob-token", timeout=10)
    from frontdesk.errors import NotFound

    with pytest.raises(NotFound):
        bob.request("GET", f"/v1/sessions/{sid}")
    with pytest.raises(NotFound):
        bob.request("GET", f"/v1/sessions/{sid}/unread")
    with pytest.raises(NotFound):
        bob.request("POST", f"/v1/sessions/{sid}/ack", {"jobs": [job]})
    # a hook run as bob with the owner's id is bob's own session of that id: none of the owner's reports
    got = bob.request("POST", f"/v1/sessions/{sid}/hook", {"event": "SessionStart"})
    assert got["delivery"] is None and got["active_jobs"] == [] and got["unread"] == 0, got
    assert [(s["id"], s["user"]) for s in bob.request("GET", "/v1/sessions")] == [(sid, "bob")]
    assert session(gw, sid)["unread"] == 1  # the owner's report is still unread, in the owner's session


def test_the_stop_hook_gives_up_after_the_block_cap(gateway_factory: Any) -> None:
    gw = gateway_factory(config="[agents]\nmax_stop_blocks = 1\nbatch_window_s = 0.3\n")
    sid = _sid()
    submit(gw, sid, "echo first")
    first = hook(gw, "stop", stop_payload(sid), "--budget", "60")
    assert json.loads(first.stdout)["decision"] == "block"
    job = submit(gw, sid, "echo second")
    gw.wait_state(job, {"COMPLETED"})
    capped = hook(gw, "stop", stop_payload(sid), "--budget", "60")
    assert (capped.returncode, capped.stdout) == (0, "")  # one block already this turn: let it stop
    assert session(gw, sid)["unread"] == 1  # kept for the next hook
    prompt = hook(gw, "prompt", start_payload(sid, "UserPromptSubmit"))
    assert "second" in json.loads(prompt.stdout)["hookSpecificOutput"]["additionalContext"]


def test_the_background_hook_outlives_a_gateway_restart(gw: Any) -> None:
    sid = _sid()
    job = submit(gw, sid, "sleep 4; echo after-restart")
    stop = hook(gw, "stop", stop_payload(sid), "--budget", "0")
    assert stop.stdout == ""
    p = hook(gw, "rewake", stop_payload(sid), "--budget", "120", background=True)
    time.sleep(0.5)
    gw.restart()  # the parked long-poll breaks; the hook asks the new gateway again
    out, err = p.communicate(timeout=120)
    assert p.returncode == 2, err
    assert err.startswith(f"[frontdesk] job you submitted ended: {job} COMPLETED.") and "after-restart" in err
