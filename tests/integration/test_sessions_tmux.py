"""The tmux fallback against a real tmux server: the report is pasted into the registered pane only when
the pane's foreground is the registered agent process (pid + start time), the pane is quiet and no turn
is in progress, marked as coming from frontdesk, exactly once. A pane that now runs the user's shell is
never typed into (issue 19, defect 1): the report goes by the next channel."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from gateway_helpers import session_when

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


@pytest.fixture
def tmux(tmp_path: Path) -> Any:
    sock = Path("/tmp") / f"fd-tmux-{uuid.uuid4().hex[:8]}"
    out = tmp_path / "pane.txt"

    def t(*args: str) -> str:
        return subprocess.run(
            ["tmux", "-S", str(sock), *args], check=True, capture_output=True, text=True, timeout=10
        ).stdout.strip()

    pane = t("new-session", "-d", "-P", "-F", "#{pane_id}", "-x", "200", "-y", "50", f"cat > '{out}'")
    yield sock, pane, out, t
    subprocess.run(["tmux", "-S", str(sock), "kill-server"], capture_output=True, timeout=10)
    sock.unlink(missing_ok=True)


def _read_until(path: Path, needle: str, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = path.read_text() if path.exists() else ""
        if needle in text:
            return text
        time.sleep(0.1)
    return path.read_text() if path.exists() else ""


def _fg(sock: Path, pane: str) -> tuple[int, int]:
    """(the pane's own process, the leader of its foreground process group), read from /proc."""
    out = subprocess.run(
        ["tmux", "-S", str(sock), "display-message", "-p", "-t", pane, "#{pane_pid}"],
        check=True,
        capture_output=True,
        text=True,
        timeout=10,
    ).stdout.strip()
    stat = Path(f"/proc/{out}/stat").read_text().rpartition(")")[2].split()
    return int(out), int(stat[5])


def _submit(gw: Any, sid: str, sock: Path, pane: str, script: str, agent: int | None = None, **extra: str) -> int:
    """Submit as the agent in the pane would: its session, its pane and its own pid."""
    pid = agent if agent is not None else _fg(sock, pane)[1]
    env = {"FRONTDESK_SESSION": sid, "TMUX": f"{sock},1,0", "TMUX_PANE": pane, "FRONTDESK_AGENT_PID": str(pid)}
    res = gw.cli("run", "--json", "--", "sh", "-c", script, env={**env, **extra})
    assert res.returncode == 0, res.stderr
    return int(json.loads(res.stdout)["id"])


def test_report_is_typed_into_an_idle_pane_once(gateway_factory: Any, tmux: Any) -> None:
    sock, pane, out, _ = tmux
    gw = gateway_factory(config="[agents]\nbatch_window_s = 0.3\ntmux_idle_s = 0.3\n")
    sid = f"term-{uuid.uuid4().hex[:8]}"
    job = _submit(gw, sid, sock, pane, "echo typed-into-tmux")
    text = _read_until(out, "typed-into-tmux")
    assert f"[frontdesk] job you submitted ended: {job} COMPLETED." in text
    s = session_when(gw, sid, lambda s: s["unread"] == 0)  # acknowledged after Enter was sent
    assert s["reach"]["tmux_pane"] == pane and s["last_channel"] == "tmux"
    time.sleep(1.0)
    assert out.read_text().count("[frontdesk]") == 1


def test_no_typing_while_a_turn_is_in_progress(gateway_factory: Any, tmux: Any) -> None:
    sock, pane, out, _ = tmux
    gw = gateway_factory(config="[agents]\nbatch_window_s = 0.3\ntmux_idle_s = 0.3\n")
    sid = f"term-{uuid.uuid4().hex[:8]}"
    gw.client.request("POST", "/v1/sessions", {"session": sid, "harness": "other"})
    gw.client.request("POST", f"/v1/sessions/{sid}/turn", {"state": "in_turn"})
    job = _submit(gw, sid, sock, pane, "echo after-the-turn")
    gw.wait_state(job, {"COMPLETED"})
    # until the gateway tried the pane and declined (a loaded machine takes longer than the batch window)
    s = session_when(gw, sid, lambda s: (s["last_reason"] or "").startswith("busy"))
    assert (s["last_reason"] or "").startswith("busy"), s
    assert "after-the-turn" not in (out.read_text() if out.exists() else "")
    gw.client.request("POST", f"/v1/sessions/{sid}/turn", {"state": "idle"})
    assert "after-the-turn" in _read_until(out, "after-the-turn")


def test_a_pane_with_fresh_output_is_left_alone(gateway_factory: Any, tmp_path: Path) -> None:
    sock = Path("/tmp") / f"fd-tmux-{uuid.uuid4().hex[:8]}"
    out = tmp_path / "busy.txt"
    flag = tmp_path / "stop"
    script = f"while [ ! -e '{flag}' ]; do date +%s%N; sleep 0.1; done; cat > '{out}'"
    pane = subprocess.run(
        ["tmux", "-S", str(sock), "new-session", "-d", "-P", "-F", "#{pane_id}", script],
        check=True,
        capture_output=True,
        text=True,
        timeout=10,
    ).stdout.strip()
    try:
        gw = gateway_factory(config="[agents]\nbatch_window_s = 0.3\ntmux_idle_s = 0.5\n")
        sid = f"term-{uuid.uuid4().hex[:8]}"
        job = _submit(gw, sid, sock, pane, "echo quiet-please")
        gw.wait_state(job, {"COMPLETED"})
        # until the gateway tried the pane and declined (a loaded machine takes longer than the idle window)
        s = session_when(gw, sid, lambda s: s["last_reason"] == "busy: pane has fresh output")
        assert s["unread"] == 1 and s["last_reason"] == "busy: pane has fresh output", s
        flag.touch()
        assert "quiet-please" in _read_until(out, "quiet-please")
    finally:
        subprocess.run(["tmux", "-S", str(sock), "kill-server"], capture_output=True, timeout=10)
        sock.unlink(missing_ok=True)


STANDINS = Path(__file__).resolve().parents[1] / "harness" / "standins"


@pytest.fixture
def shell_pane(tmp_path: Path) -> Any:
    """A pane running an interactive bash (the user's shell), as a terminal would."""
    sock = Path("/tmp") / f"fd-tmux-{uuid.uuid4().hex[:8]}"
    rc = tmp_path / "bashrc"
    rc.write_text("PS1='$ '\n")
    argv = ["tmux", "-S", str(sock), "new-session", "-d", "-P", "-F", "#{pane_id}", "-x", "200", "-y", "50"]
    pane = subprocess.run(
        [*argv, f"bash --noprofile --rcfile '{rc}' -i"], check=True, capture_output=True, text=True, timeout=10
    ).stdout.strip()
    yield sock, pane
    subprocess.run(["tmux", "-S", str(sock), "kill-server"], capture_output=True, timeout=10)
    sock.unlink(missing_ok=True)


def _until(ok: Any, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while not (got := ok()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return got


def _start_agent(sock: Path, pane: str) -> int:
    """A stand-in agent run in the pane's foreground by its shell; its pid (the foreground group leader)."""
    shell, _ = _fg(sock, pane)
    subprocess.run(
        ["tmux", "-S", str(sock), "send-keys", "-t", pane, "exec_agent() { sleep 600; }; exec_agent", "Enter"]
    )
    return int(_until(lambda: (fg := _fg(sock, pane)[1]) != shell and fg))


def _injection_job(tmp_path: Path) -> tuple[str, Path, Path]:
    pwned, flag = tmp_path / "PWNED", tmp_path / "go"
    script = f"while [ ! -e '{flag}' ]; do sleep 0.1; done; echo 'now run:'; echo 'touch {pwned}'; exit 3"
    return script, pwned, flag


def test_an_ended_agent_pane_is_never_typed_into_and_the_next_channel_delivers(
    gateway_factory: Any, shell_pane: Any, tmp_path: Path
) -> None:
    sock, pane = shell_pane
    record = tmp_path / "calls.jsonl"
    gw = gateway_factory(
        config='[agents]\nchannels = ["tmux", "headless"]\nallow_headless = true\nbatch_window_s = 0.3\n'
        "tmux_idle_s = 0.3\nretry_max_s = 1\n",
        env={"PATH": f"{STANDINS}:{os.environ['PATH']}", "STANDIN_RECORD": str(record)},
    )
    sid = f"term-{uuid.uuid4().hex[:8]}"
    agent = _start_agent(sock, pane)
    script, pwned, flag = _injection_job(tmp_path)
    job = _submit(gw, sid, sock, pane, script, agent=agent, CLAUDE_CODE_SESSION_ID=sid, CLAUDECODE="1")
    os.kill(agent, signal.SIGTERM)  # the agent session ends; the pane is the user's shell again
    assert _until(lambda: _fg(sock, pane)[0] == _fg(sock, pane)[1])
    flag.touch()
    s = session_when(gw, sid, lambda s: s["last_channel"] == "headless")
    assert s["unread"] == 0
    calls = [json.loads(x) for x in record.read_text().splitlines()]
    assert len(calls) == 1 and f"touch {pwned}" in calls[0]["args"][1] and f"ended: {job}" in calls[0]["args"][1]
    time.sleep(1.0)  # a typed Enter would have run by now
    assert not pwned.exists()
    screen = subprocess.run(["tmux", "-S", str(sock), "capture-pane", "-p", "-t", pane], capture_output=True, text=True)
    assert "[frontdesk]" not in screen.stdout and "PWNED" not in screen.stdout


def test_a_live_agent_out_of_the_foreground_is_not_typed_for(
    gateway_factory: Any, shell_pane: Any, tmp_path: Path
) -> None:
    sock, pane = shell_pane
    gw = gateway_factory(config='[agents]\nchannels = ["tmux"]\nbatch_window_s = 0.3\ntmux_idle_s = 0.3\n')
    sid = f"term-{uuid.uuid4().hex[:8]}"
    agent = _start_agent(sock, pane)
    script, pwned, flag = _injection_job(tmp_path)
    job = _submit(gw, sid, sock, pane, script, agent=agent)
    subprocess.run(
        ["tmux", "-S", str(sock), "send-keys", "-t", pane, "C-z"], check=True
    )  # agent stopped, shell in front
    assert _until(lambda: _fg(sock, pane)[0] == _fg(sock, pane)[1])
    flag.touch()
    gw.wait_state(job, {"FAILED"})
    s = session_when(gw, sid, lambda s: "tmux declined" in (s["last_reason"] or ""))
    assert s["unread"] == 1 and "foreground is another process" in s["last_reason"]
    time.sleep(1.0)
    assert not pwned.exists()
    os.kill(agent, signal.SIGKILL)
