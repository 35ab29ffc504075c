"""A session's process is its pid and recorded start time: a reused pid is not the session (headless, inbox)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest

from frontdesk.agents.channels.headless import pid_alive
from frontdesk.procid import start_ticks
from leftovers import stop_process


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(["sleep", "300"])
    yield proc
    stop_process(proc)


def test_a_recorded_start_must_match(sleeper: subprocess.Popen[bytes]) -> None:
    start = start_ticks(sleeper.pid)
    assert start is not None
    assert pid_alive(sleeper.pid, start) and pid_alive(str(sleeper.pid), start)
    assert not pid_alive(sleeper.pid, start - 1), "a reused pid was taken for the session's process"
    assert pid_alive(sleeper.pid), "without a recorded start: the pid alone, as before"


@pytest.mark.parametrize("pid", [None, "x", 0, -1, True, 10**30, "9" * 40, 1.5])
def test_no_process_for_what_names_none(pid: object) -> None:
    assert not pid_alive(pid) and not pid_alive(pid, 12345)
