"""A session's transcript path comes from its hooks (the user's words): a root gateway asking it whether the
session's turn ended must open nothing but a regular file of that user's. Before, it opened the path as root and
checked its owner afterwards: a FIFO named there was opened by root (a writer blocked on it was let go; opening a
device is an action of its own: a watchdog arms). Probe: fdh6b's session names a root FIFO a writer waits on."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from fifo_helpers import BlockedWriter
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
    w = BlockedWriter(fifo)
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
        assert not w.released.is_set(), "the gateway opened the FIFO the session named"
    finally:
        try:
            w.stop()
        finally:
            shutil.rmtree(d, ignore_errors=True)
