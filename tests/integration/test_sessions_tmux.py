"""The tmux fallback against a real tmux server: the report is pasted into the registered pane only when
the pane is quiet and no turn is in progress, marked as coming from frontdesk, exactly once."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

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


def _session_when(gw: Any, sid: str, ok: Any, timeout: float = 20) -> dict[str, Any]:
    """The session record once `ok(record)` holds (reads the API; no hidden sleep)."""
    deadline = time.monotonic() + timeout
    while True:
        s: dict[str, Any] = gw.client.request("GET", f"/v1/sessions/{sid}")
        if ok(s) or time.monotonic() > deadline:
            return s
        time.sleep(0.05)


def _read_until(path: Path, needle: str, timeout: float = 20) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = path.read_text() if path.exists() else ""
        if needle in text:
            return text
        time.sleep(0.1)
    return path.read_text() if path.exists() else ""


def _submit(gw: Any, sid: str, sock: Path, pane: str, script: str) -> int:
    env = {"FRONTDESK_SESSION": sid, "TMUX": f"{sock},1,0", "TMUX_PANE": pane}
    res = gw.cli("run", "--json", "--", "sh", "-c", script, env=env)
    assert res.returncode == 0, res.stderr
    return int(json.loads(res.stdout)["id"])


def test_report_is_typed_into_an_idle_pane_once(gateway_factory: Any, tmux: Any) -> None:
    sock, pane, out, _ = tmux
    gw = gateway_factory(config="[agents]\nbatch_window_s = 0.3\ntmux_idle_s = 0.3\n")
    sid = f"term-{uuid.uuid4().hex[:8]}"
    job = _submit(gw, sid, sock, pane, "echo typed-into-tmux")
    text = _read_until(out, "typed-into-tmux")
    assert f"[frontdesk] job you submitted ended: {job} COMPLETED." in text
    s = _session_when(gw, sid, lambda s: s["unread"] == 0)  # acknowledged after Enter was sent
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
    time.sleep(1.5)
    assert "after-the-turn" not in (out.read_text() if out.exists() else "")
    assert gw.client.request("GET", f"/v1/sessions/{sid}")["last_reason"].startswith("busy")
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
        time.sleep(1.5)
        s = gw.client.request("GET", f"/v1/sessions/{sid}")
        assert s["unread"] == 1 and s["last_reason"] == "busy: pane has fresh output"
        flag.touch()
        assert "quiet-please" in _read_until(out, "quiet-please")
    finally:
        subprocess.run(["tmux", "-S", str(sock), "kill-server"], capture_output=True, timeout=10)
        sock.unlink(missing_ok=True)
