"""A session's transcript path comes from its hooks (the user's words): a root gateway asking it whether the
session's turn ended must open nothing but a regular file of that user's. Before, it opened the path as root and
checked its owner afterwards: a FIFO named there was opened by root (a writer blocked on it was let go; opening a
device is an action of its own: a watchdog arms). Probe: fdh6b's session names a root FIFO a writer waits on."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import threading
from pathlib import Path

import pytest

from frontdesk.agents.channels.inbox import Busy, InboxChannel
from frontdesk.agents.model import AgentSettings, Harness, Session, TurnState
from unix_users import ensure_user

USER = "fdh6b"
TOKEN = "inbox-token-" + "t" * 24


def test_a_transcript_path_naming_a_fifo_opens_nothing(facility_users: dict[str, int], tmp_path: Path) -> None:
    assert os.geteuid() == 0
    ensure_user(USER)
    d = Path(tempfile.mkdtemp(prefix="fdtranscript-", dir="/tmp"))
    d.chmod(0o755)
    fifo = d / "session.jsonl"
    os.mkfifo(fifo, 0o600)  # root's
    released = threading.Event()

    def writer() -> None:
        fd = os.open(fifo, os.O_WRONLY)  # blocks until someone opens the FIFO for reading
        released.set()
        os.close(fd)

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    try:
        ch = InboxChannel(AgentSettings(), home=tmp_path)
        ctx = {"inbox_socket": str(d / "inbox.sock"), "inbox_token": TOKEN, "agent_pid": os.getpid()}
        assert ch.capture("s-fdh6b", USER, ctx, {})
        reach = {"pid": os.getpid(), "transcript_path": str(fifo)}
        session = Session(
            id="s-fdh6b", user=USER, harness=Harness.CLAUDE_CODE, reach=reach, turn_state=TurnState.UNKNOWN
        )
        with pytest.raises(Busy):  # the turn's state is unknown: nothing is written
            asyncio.run(ch.deliver(session, "[frontdesk] job 7 ended: COMPLETED", [7]))
        assert not released.is_set(), "the gateway opened the FIFO the session named"
    finally:
        if not released.is_set():
            os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))  # let the writer go
        t.join(5)
        shutil.rmtree(d, ignore_errors=True)
