"""Ending what a test left running: a gateway's shepherds (recognised by their command line), a process it started."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path
from typing import Any


def stop_shepherds(home: Path) -> None:
    """SIGTERM the shepherds still running for attempts under `home/local` (each then ends its job).

    A shepherd.pid file outlives its shepherd and pids come round again (pid_max is 32768 on these machines),
    so a pid is signalled only while /proc shows that attempt's shepherd under it, never whatever process
    holds the number now (a module-scoped facility gateway, slurmd, sshd, another test's helper)."""
    for pidfile in (home / "local").glob("*/shepherd.pid"):
        try:
            pid = int(pidfile.read_text().split()[0])  # `pid start boot` (procid)
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if b"frontdesk.backends.shepherd" in argv and os.fsencode(pidfile.parent) in argv:
                os.kill(pid, signal.SIGTERM)
        except (OSError, ValueError):
            pass


def stop_process(proc: subprocess.Popen[Any], group: bool = False, grace: float = 30.0) -> None:
    """SIGTERM a process a test started (its whole process group with `group`), SIGKILL it if it has not
    ended within `grace` seconds, and reap it: a teardown never leaves it running into later tests, and never
    raises TimeoutExpired instead of cleaning up."""

    def send(sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            if group:
                os.killpg(proc.pid, sig)
            else:
                proc.send_signal(sig)

    if proc.poll() is None:
        send(signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        send(signal.SIGKILL)
        proc.wait()
