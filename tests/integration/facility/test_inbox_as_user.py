"""A root gateway writes into a session's inbox as the session's user: the listener sees that user as its peer,
and a socket in a directory the user cannot open stays out of reach (the kernel checks the user, not root)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from facility_helpers import SYSTEM_PY, user_env

from frontdesk.agents.channels.inbox import InboxChannel
from frontdesk.agents.model import AgentSettings, Harness, Session, TurnState
from leftovers import stop_process
from unix_users import ensure_user, reachable

HERE = Path(__file__).resolve().parent
USER = "fdh6a"
TOKEN = "inbox-token-" + "q" * 24


@pytest.fixture
def private_dir(facility_users: dict[str, int]) -> Iterator[Path]:
    """A 0700 directory of fdh6a's (as Claude Code makes for its messaging socket)."""
    ensure_user(USER)
    d = Path(tempfile.mkdtemp(prefix="fdh6-inbox-", dir="/tmp"))
    shutil.chown(d, USER, USER)
    d.chmod(0o700)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _listen(sock: Path, log: Path) -> subprocess.Popen[str]:
    argv = ["runuser", "-u", USER, "--", *user_env(USER), SYSTEM_PY, str(reachable(HERE / "inbox_listener.py"))]
    proc = subprocess.Popen([*argv, str(sock), str(log)], stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def _stop(proc: subprocess.Popen[str]) -> None:
    stop_process(proc, group=True)
    if proc.stdout is not None:
        proc.stdout.close()


def _deliver(sock: Path, home: Path) -> bool:
    ch = InboxChannel(AgentSettings(), home=home)
    ctx = {"inbox_socket": str(sock), "inbox_token": TOKEN, "agent_pid": os.getpid()}
    assert ch.capture("s-fdh6a", USER, ctx, {})
    session = Session(
        id="s-fdh6a", user=USER, harness=Harness.CLAUDE_CODE, reach={"pid": os.getpid()}, turn_state=TurnState.IDLE
    )
    return asyncio.run(ch.deliver(session, "[frontdesk] job 7 ended: COMPLETED", [7]))


def test_the_inbox_write_comes_from_the_sessions_user_not_root(private_dir: Path, tmp_path: Path) -> None:
    assert os.geteuid() == 0
    sock, log = private_dir / "inbox.sock", private_dir / "got.json"
    proc = _listen(sock, log)
    try:
        assert _deliver(sock, tmp_path) is True
        proc.wait(timeout=10)
    finally:
        _stop(proc)
    got = json.loads(log.read_text())
    assert got["peer_uid"] == ensure_user(USER).pw_uid != 0  # SO_PEERCRED on the listener's side: the user, not root
    auth, message = (json.loads(line) for line in got["data"].splitlines())
    assert auth == {"type": "auth", "token": TOKEN}
    assert message["type"] == "user" and message["message"]["content"].endswith("job 7 ended: COMPLETED")


def test_an_inbox_the_user_cannot_reach_gets_nothing(private_dir: Path, tmp_path: Path) -> None:
    sock, log = private_dir / "inbox.sock", private_dir / "got.json"
    proc = _listen(sock, log)
    locked = Path(tempfile.mkdtemp(prefix="fdh6-root-", dir="/tmp"))  # root's, 0700: the user cannot open it
    try:
        locked.chmod(0o700)
        os.rename(sock, locked / "inbox.sock")  # still the user's socket and listener, now behind root's door
        assert _deliver(locked / "inbox.sock", tmp_path) is False
        assert proc.poll() is None and not log.exists()  # nothing connected
    finally:
        _stop(proc)
        shutil.rmtree(locked, ignore_errors=True)
