"""The embedded backend's process plumbing: starting a detached shepherd, telling whether a pid still lives."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from frontdesk.jobenv import shepherd_env
from frontdesk.spawn import spawn_detached

__all__ = ["alive", "exited", "mem_total", "spawn_shepherd"]


def mem_total() -> int:
    """This host's memory in bytes (MemTotal of /proc/meminfo; 0 when unknown)."""
    with open("/proc/meminfo") as fh:
        for line in fh:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    return 0


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie does not)."""
    if pid <= 0:
        return False
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def exited(pid: int) -> bool:
    """Whether a shepherd has ended (reaping it when it is our child)."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done != 0
    except ChildProcessError:  # not our child (adopted after a restart)
        return not alive(pid)


def spawn_shepherd(adir: Path) -> int:
    """Start the shepherd of the attempt in `adir`, detached (its own session), logging to shepherd.log."""
    # -P: never the gateway's working directory on the import path (the shepherd may run as root).
    argv = [sys.executable, "-P", "-m", "frontdesk.backends.shepherd", str(adir)]
    return spawn_detached(argv, shepherd_env(), adir / "shepherd.log")
