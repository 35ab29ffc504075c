"""One process, named so that a reused pid never passes for it: its pid, its start time (clock ticks since boot,
/proc/PID/stat field 22) and the boot id (/proc/sys/kernel/random/boot_id).

pid_max is 32768 on some hosts: a pid read from a file (a shepherd's, an sbatch's) soon names some unrelated
process. Every liveness check and every signal to such a pid goes through `running` and `send`, which act only
while that very process runs (`send` holds a pidfd across the check, so the pid cannot be reused in between).
A record from before start times were kept (`start` None) is treated as before: the pid alone.
"""

from __future__ import annotations

import os
import re
import signal
from dataclasses import dataclass

__all__ = ["PID_LIMIT", "ProcId", "boot_id", "identify", "parse", "running", "send", "start_ticks"]

_BOOT_ID = "/proc/sys/kernel/random/boot_id"
_RECORD = re.compile(r"([0-9]{1,7})(?: ([0-9]{1,19}) ([0-9a-f-]{1,64}))?", re.ASCII)
PID_LIMIT = 4194304
"""The kernel's largest pid_max (PID_MAX_LIMIT on 64-bit)."""


@dataclass(frozen=True)
class ProcId:
    """A process: `pid` plus, when known, its start ticks and the boot it started in (that process, no other)."""

    pid: int
    start: int | None = None
    boot: str | None = None

    def text(self) -> str:
        """One line, `pid start boot` (the form `parse` reads)."""
        return f"{self.pid} {self.start} {self.boot}\n" if self.start is not None and self.boot else f"{self.pid}\n"


def _stat(pid: int) -> tuple[str, int] | None:
    """A process's state letter and start ticks (None: no such process, or unreadable)."""
    if not 0 < pid <= PID_LIMIT:
        return None
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read(4096).decode("ascii", errors="replace")
    except OSError:
        return None
    fields = raw.rpartition(")")[2].split()  # after the command name, which may hold spaces and parentheses
    if len(fields) <= 19 or not fields[19].isdigit():
        return None
    return fields[0], int(fields[19])


def start_ticks(pid: int) -> int | None:
    """When process `pid` started (clock ticks after boot); None when there is none."""
    stat = _stat(pid)
    return stat[1] if stat else None


def boot_id() -> str | None:
    """This boot's id (None when /proc does not tell)."""
    try:
        with open(_BOOT_ID, encoding="ascii") as fh:
            return fh.read(64).strip() or None
    except (OSError, ValueError):
        return None


def identify(pid: int) -> ProcId | None:
    """The process under `pid` now (with its start and this boot), None when there is none."""
    start = start_ticks(pid)
    return None if start is None else ProcId(pid, start, boot_id())


def parse(text: str) -> ProcId | None:
    """A record `ProcId.text` wrote, or an older one holding only a pid; None for anything else."""
    found = _RECORD.fullmatch(text[:200].strip())
    if found is None or not 0 < int(found[1]) <= PID_LIMIT:
        return None
    return ProcId(int(found[1]), int(found[2]), found[3]) if found[2] else ProcId(int(found[1]))


def running(proc: ProcId) -> bool:
    """Whether that very process still runs (a zombie does not); a record without a start: its pid runs."""
    stat = _stat(proc.pid)
    if stat is None or stat[0] == "Z":
        return False
    return proc.start is None or (stat[1] == proc.start and proc.boot == boot_id())


def send(proc: ProcId, sig: int = signal.SIGTERM) -> bool:
    """Send `sig` to that very process; False (nothing sent) when it no longer runs."""
    if not 0 < proc.pid <= PID_LIMIT:
        return False
    try:
        fd = os.pidfd_open(proc.pid)
    except OSError:
        return False
    try:
        if not running(proc):
            return False
        signal.pidfd_send_signal(fd, sig)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
