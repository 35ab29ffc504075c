"""The live channels on their own (no harness binary): the inbox against a real Unix socket listener that
records what it is sent, the Codex channel against a stand-in `codex` executable that records its argv.
Fast; no marker."""

from __future__ import annotations

import asyncio
import json
import os
import pwd
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from frontdesk.agents.channels.base import Busy
from frontdesk.agents.channels.codex_live import CodexLiveChannel
from frontdesk.agents.channels.inbox import INBOX_PREFACE, InboxChannel, transcript_idle
from frontdesk.agents.detect import detect_context
from frontdesk.agents.model import AgentSettings, Harness, Session, TurnState

TOKEN = "0123456789abcdef0123456789abcdef"
ME = pwd.getpwuid(os.getuid()).pw_name  # an inbox is used only when it is its session's user's


class Inbox:
    """A Unix socket that reads each connection to its end, like Claude Code's messaging socket."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.got: list[list[dict[str, Any]]] = []
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.bind(str(path))
        self.sock.listen(4)
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            data = b""
            while chunk := conn.recv(65536):
                data += chunk
            self.got.append([json.loads(line) for line in data.decode().splitlines() if line])
            conn.close()

    def close(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept(); later connects are refused
        except OSError:
            pass
        self.sock.close()


@pytest.fixture
def inbox(tmp_path: Path) -> Iterator[Inbox]:
    box = Inbox(Path(f"/tmp/fd-inbox-{os.getpid()}-{time.monotonic_ns()}.sock"))
    yield box
    box.close()
    box.path.unlink(missing_ok=True)


def session(
    state: TurnState = TurnState.IDLE,
    changed: float = 0.0,
    pid: int | None = None,
    harness: Harness = Harness.CLAUDE_CODE,
    user: str = ME,
) -> Session:
    return Session(
        id="s-1",
        user=user,
        harness=harness,
        reach={"pid": pid or os.getpid()},
        turn_state=state,
        turn_changed_at=changed,
    )


def channel(tmp_path: Path, inbox: Inbox | None = None, user: str = ME) -> InboxChannel:
    ch = InboxChannel(AgentSettings(), home=tmp_path)
    if inbox is not None:
        ctx = {"inbox_socket": str(inbox.path), "inbox_token": TOKEN, "agent_pid": os.getpid()}
        assert ch.capture("s-1", user, ctx, {})
    return ch


def test_capture_keeps_the_token_owner_only_and_out_of_names(tmp_path: Path, inbox: Inbox) -> None:
    channel(tmp_path, inbox)
    [f] = list((tmp_path / "agents" / "inbox").iterdir())
    assert stat.S_IMODE(f.stat().st_mode) == 0o600 and stat.S_IMODE(f.parent.stat().st_mode) == 0o700
    assert "s-1" not in f.name and json.loads(f.read_text())["token"] == TOKEN


def test_capture_needs_socket_and_token(tmp_path: Path) -> None:
    ch = InboxChannel(AgentSettings(), home=tmp_path)
    assert not ch.capture("s-1", ME, {"inbox_socket": "/x"}, {})
    assert ch.available(session())[1].startswith("no inbox captured")


def test_delivers_two_lines_with_the_frontdesk_preface_when_idle(tmp_path: Path, inbox: Inbox) -> None:
    ch = channel(tmp_path, inbox)
    ok, why = ch.available(session())
    assert ok and "idle" in why
    assert asyncio.run(ch.deliver(session(), "[frontdesk] job 7 ended", [7]))
    deadline = time.monotonic() + 30
    while not inbox.got and time.monotonic() < deadline:
        time.sleep(0.01)
    [[auth, msg]] = inbox.got
    assert auth == {"type": "auth", "token": TOKEN}
    assert msg["type"] == "user" and msg["message"]["role"] == "user"
    assert msg["message"]["content"].startswith(INBOX_PREFACE) and "job 7 ended" in msg["message"]["content"]


def test_busy_mid_turn_and_until_the_woken_turn_ends(tmp_path: Path, inbox: Inbox) -> None:
    ch = channel(tmp_path, inbox)
    for state in (TurnState.IN_TURN, TurnState.STOPPING):
        assert ch.available(session(state))[0]  # reachable, but not now
        with pytest.raises(Busy):
            asyncio.run(ch.deliver(session(state), "r", [1]))
    assert asyncio.run(ch.deliver(session(), "r", [1]))
    sent = time.time()
    with pytest.raises(Busy, match="wake was sent"):
        asyncio.run(ch.deliver(session(TurnState.IDLE, changed=sent - 5), "r2", [2]))
    with pytest.raises(Busy):
        asyncio.run(ch.deliver(session(TurnState.IN_TURN, changed=sent + 1), "r2", [2]))
    assert asyncio.run(ch.deliver(session(TurnState.IDLE, changed=sent + 2), "r2", [2]))


def test_unavailable_when_the_process_or_socket_is_gone(tmp_path: Path, inbox: Inbox) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    ch = InboxChannel(AgentSettings(), home=tmp_path)
    ch.capture("s-1", ME, {"inbox_socket": str(inbox.path), "inbox_token": TOKEN, "agent_pid": dead.pid}, {})
    ok, why = ch.available(session(pid=dead.pid))
    assert not ok and why == f"session process {dead.pid} is gone"
    [f] = list((tmp_path / "agents" / "inbox").iterdir())
    assert TOKEN not in f.read_text()  # a dead session's token is forgotten
    assert not asyncio.run(ch.deliver(session(), "r", [1]))
    ch = channel(tmp_path, inbox)  # captured again (a new submission from the live session)
    ok, why = ch.available(session(pid=1))  # resumed in another process: its own inbox, not this one
    assert not ok and why.startswith(f"inbox was captured from process {os.getpid()}")
    assert not ch.available(session(TurnState.ENDED))[0]
    assert not ch.available(session(harness=Harness.CODEX))[0]
    assert not ch.available(session(user="mallory"))[0]  # a token is only ever used for its owner
    inbox.close()
    assert not asyncio.run(ch.deliver(session(), "r", [1]))  # refused: the next channel gets it
    inbox.path.unlink()
    assert ch.available(session()) == (False, "inbox socket is gone")


def test_without_hooks_the_transcript_tells_idle(tmp_path: Path) -> None:
    t = tmp_path / "t.jsonl"
    assert transcript_idle(str(t), time.time()) is None
    lines = [
        {"type": "user", "message": {"role": "user"}},
        {"type": "assistant"},
        {"type": "system", "subtype": "turn_duration"},
        {"type": "queue-operation"},
    ]
    t.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    assert transcript_idle(str(t), time.time()) is False  # just written: still moving
    assert transcript_idle(str(t), time.time() + 5) is True
    t.write_text("\n".join(json.dumps(x) for x in lines + [{"type": "user"}]) + "\n")
    assert transcript_idle(str(t), time.time() + 5) is False


def test_without_hooks_a_wake_holds_until_the_transcript_shows_its_turn_ended(tmp_path: Path, inbox: Inbox) -> None:
    t = tmp_path / "s-1.jsonl"
    ended = [{"type": "user"}, {"type": "assistant"}, {"type": "system", "subtype": "turn_duration"}]
    t.write_text("\n".join(json.dumps(x) for x in ended) + "\n")
    os.utime(t, (time.time() - 10, time.time() - 10))
    ch = channel(tmp_path, inbox)
    s = Session(id="s-1", user=ME, harness=Harness.CLAUDE_CODE, reach={"pid": os.getpid(), "transcript_path": str(t)})
    assert ch.available(s) == (True, f"live inbox of process {os.getpid()}, session idle")
    assert asyncio.run(ch.deliver(s, "r", [1]))
    with pytest.raises(Busy, match="wake was sent"):  # the transcript has not moved since
        asyncio.run(ch.deliver(s, "r2", [2]))
    t.write_text(t.read_text() + json.dumps({"type": "user"}) + "\n")  # the woken turn starts
    os.utime(t, (time.time() + 2, time.time() + 2))
    with pytest.raises(Busy):
        asyncio.run(ch.deliver(s, "r2", [2]))
    t.write_text(t.read_text() + "\n".join(json.dumps(x) for x in ended[1:]) + "\n")  # ...and ends
    os.utime(t, (time.time() - 5, time.time() - 5))
    ch._woken[s.key] = time.time() - 20  # the wake was sent before that turn was written
    assert asyncio.run(ch.deliver(s, "r2", [2]))


def test_detect_context_sends_the_inbox_only_over_the_unix_socket() -> None:
    env = {
        "CLAUDECODE": "1",
        "CLAUDE_CODE_SESSION_ID": "s-1",
        "CLAUDE_PID": "42",
        "CLAUDE_CODE_MESSAGING_SOCKET": "/tmp/cc-socks/42.sock",
        "CLAUDE_CODE_MESSAGING_TOKEN": TOKEN,
    }
    ctx = detect_context(env)
    assert ctx["inbox_socket"] == "/tmp/cc-socks/42.sock" and ctx["inbox_token"] == TOKEN
    assert ctx["agent_pid"] == 42 and ctx["session"] == "s-1"
    remote = detect_context({**env, "FRONTDESK_URL": "https://gw.example:8443"})
    assert "inbox_token" not in remote and "inbox_socket" not in remote


# -- Codex ------------------------------------------------------------------------------------------
@pytest.fixture
def fake_codex(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `codex` on PATH that records argv; `daemon version` fails unless the control socket exists."""
    bindir, home = tmp_path / "bin", tmp_path / "codex-home"
    bindir.mkdir()
    log = tmp_path / "argv.jsonl"
    exe = bindir / "codex"
    exe.write_text(f"""#!{sys.executable}
import json, os, sys
open({str(log)!r}, "a").write(json.dumps(sys.argv[1:]) + "\\n")
if sys.argv[1:4] == ["app-server", "daemon", "version"]:
    sys.exit(0 if os.path.exists({str(home / "app-server-control" / "app-server-control.sock")!r}) else 1)
""")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    monkeypatch.setenv("CODEX_HOME", str(home))
    return log


def test_codex_live_queues_and_resumes_on_the_daemon(fake_codex: Path, tmp_path: Path) -> None:
    import getpass

    ch = CodexLiveChannel(AgentSettings())
    thread = Session(id="019a-thread", user=getpass.getuser(), harness=Harness.CODEX, turn_state=TurnState.IDLE)
    ok, why = ch.available(thread)
    assert not ok and "no codex app-server daemon" in why
    ctl = tmp_path / "codex-home" / "app-server-control"
    ctl.mkdir(parents=True)
    (ctl / "app-server-control.sock").touch()
    assert ch.available(thread)[0]
    assert asyncio.run(ch.deliver(thread, "[frontdesk] job 3 ended", [3]))
    calls = [json.loads(x) for x in fake_codex.read_text().splitlines()]
    assert calls[0] == ["app-server", "daemon", "version"]
    q = calls[1]
    assert q[:3] == ["queue", "--thread", "019a-thread"] and q[-1] == "--resume"
    assert "sent by frontdesk" in q[4] and "job 3 ended" in q[4]
    with pytest.raises(Busy):
        asyncio.run(
            ch.deliver(Session(id="t", user=thread.user, harness=Harness.CODEX, turn_state=TurnState.IN_TURN), "r", [1])
        )
    assert not ch.available(Session(id="t", user="someone-else", harness=Harness.CODEX))[0]


def test_codex_live_declines_without_a_daemon(fake_codex: Path) -> None:
    import getpass

    ch = CodexLiveChannel(AgentSettings())
    thread = Session(id="t", user=getpass.getuser(), harness=Harness.CODEX, turn_state=TurnState.IDLE)
    assert not asyncio.run(ch.deliver(thread, "r", [1]))  # nothing queued: the hooks channel takes it
    assert [json.loads(x)[0] for x in fake_codex.read_text().splitlines()] == ["app-server"]
