"""spawn_detached: the daemon set-up the shepherd and an autostarted gateway share, run for real."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from frontdesk.spawn import spawn_detached

PROBE = (
    "import os, sys; print(os.getsid(0) == os.getpid(), os.readlink('/proc/self/fd/0'), os.environ['PROBE'],"
    " flush=True);"
    "sys.stderr.write('to stderr\\n')"
)


def test_a_daemon_has_its_own_session_no_stdin_and_appends_to_a_private_log(tmp_path: Path) -> None:
    log = tmp_path / "daemon.log"
    pid = spawn_detached([sys.executable, "-c", PROBE], {"PROBE": "env-seen"}, log)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert log.read_text().splitlines() == ["True /dev/null env-seen", "to stderr"]
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    pid = spawn_detached([sys.executable, "-c", "print('again')"], {}, log)
    os.waitpid(pid, 0)
    assert log.read_text().splitlines()[-1] == "again"  # appended, the first run's lines kept
    assert len(log.read_text().splitlines()) == 3


def test_a_missing_program_raises_and_leaks_no_descriptor(tmp_path: Path) -> None:
    before = len(os.listdir("/proc/self/fd"))
    try:
        spawn_detached([str(tmp_path / "no-such-program")], {}, tmp_path / "x.log")
    except FileNotFoundError:
        pass
    else:
        raise AssertionError("spawning a missing program did not fail")
    assert len(os.listdir("/proc/self/fd")) == before
