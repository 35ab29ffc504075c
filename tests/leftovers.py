"""Ending what a test's gateway left running: its jobs' shepherds, recognised by their command line."""

from __future__ import annotations

import os
import signal
from pathlib import Path


def stop_shepherds(home: Path) -> None:
    """SIGTERM the shepherds still running for attempts under `home/local` (each then ends its job).

    A shepherd.pid file outlives its shepherd and pids come round again (pid_max is 32768 on these machines),
    so a pid is signalled only while /proc shows that attempt's shepherd under it, never whatever process
    holds the number now (a module-scoped facility gateway, slurmd, sshd, another test's helper)."""
    for pidfile in (home / "local").glob("*/shepherd.pid"):
        try:
            pid = int(pidfile.read_text())
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if b"frontdesk.backends.shepherd" in argv and os.fsencode(pidfile.parent) in argv:
                os.kill(pid, signal.SIGTERM)
        except (OSError, ValueError):
            pass
