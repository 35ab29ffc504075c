"""procid: a process named by pid, start ticks and boot id, against real processes."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from frontdesk.procid import ProcId, boot_id, identify, parse, running, send, start_ticks
from leftovers import stop_process


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(["sleep", "300"])
    yield proc
    stop_process(proc)


def test_identify_names_this_process_and_its_text_round_trips() -> None:
    me = identify(os.getpid())
    assert me is not None and me.start == start_ticks(os.getpid()) and me.boot == boot_id() and me.boot
    assert parse(me.text()) == me and running(me)


def test_an_older_record_holding_only_a_pid_is_the_pid_alone() -> None:
    assert parse("4321\n") == ProcId(4321) and ProcId(4321).text() == "4321\n"
    assert running(ProcId(os.getpid()))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "12x",
        "0",
        "-5",
        "1 2",
        "1 x abc",
        "1 2 3 4",
        "1 2 ABC",
        "1 2 a/b",
        "9" * 300,
        "4194305",
        "\u00b2",
        "1  2 ab",
        "1 2 ab\n3",
    ],
)
def test_parse_refuses_what_no_shepherd_wrote(text: str) -> None:
    assert parse(text) is None


@given(st.text(max_size=300))
def test_parse_never_raises(text: str) -> None:
    got = parse(text)
    assert got is None or got.pid > 0


def test_another_start_time_is_another_process_never_signalled(sleeper: subprocess.Popen[bytes]) -> None:
    real = identify(sleeper.pid)
    assert real is not None and real.start is not None
    reused = ProcId(sleeper.pid, real.start - 1, real.boot)  # the same pid, an earlier process's start
    assert not running(reused) and not send(reused, signal.SIGTERM)
    other_boot = ProcId(sleeper.pid, real.start, "0" * 8 + "-0000-0000-0000-" + "0" * 12)
    assert not running(other_boot) and not send(other_boot, signal.SIGTERM)
    assert sleeper.poll() is None, "a process with another start time or boot was signalled"
    assert send(real, signal.SIGTERM)
    assert sleeper.wait(timeout=30) == -signal.SIGTERM


def test_a_zombie_or_a_gone_process_does_not_run(sleeper: subprocess.Popen[bytes]) -> None:
    real = identify(sleeper.pid)
    assert real is not None
    sleeper.kill()
    os.waitid(os.P_PID, sleeper.pid, os.WEXITED | os.WNOWAIT)  # a zombie: ended, not yet reaped
    assert not running(real) and not send(real, signal.SIGTERM)
    sleeper.wait()
    assert not running(real) and identify(sleeper.pid) is None


@pytest.mark.parametrize("pid", [0, -1, 4194305, 10**30])
def test_a_pid_no_kernel_gives_is_never_running_nor_signalled(pid: int) -> None:
    assert not running(ProcId(pid)) and not send(ProcId(pid), signal.SIGTERM) and identify(pid) is None
