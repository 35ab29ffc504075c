"""The embedded backend's process plumbing: starting a detached shepherd, telling whether it has ended."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from frontdesk import procid
from frontdesk.jobenv import shepherd_env
from frontdesk.procid import ProcId
from frontdesk.spawn import spawn_detached

__all__ = ["exited", "mem_total", "spawn_shepherd"]


def mem_total() -> int:
    """This host's memory in bytes (MemTotal of /proc/meminfo; 0 when unknown)."""
    with open("/proc/meminfo") as fh:
        for line in fh:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    return 0


def exited(pid: int, proc: ProcId | None = None) -> bool:
    """Whether a shepherd has ended (reaping it when it is our child; else `proc`, the one its file names, is
    checked by its start too: a pid reused by another process is not that shepherd)."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done != 0
    except ChildProcessError:  # not our child (adopted after a restart)
        return not procid.running(proc or ProcId(pid))


def spawn_shepherd(adir: Path) -> int:
    """Start the shepherd of the attempt in `adir`, detached (its own session), logging to shepherd.log."""
    # -P: never the gateway's working directory on the import path (the shepherd may run as root).
    argv = [sys.executable, "-P", "-m", "frontdesk.backends.shepherd", str(adir)]
    return spawn_detached(argv, shepherd_env(), adir / "shepherd.log")
