"""Reading one process from /proc: cheap first (stat), the rest only for processes seen for the first time."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache

from frontdesk.telemetry.attribution import ENV_MARKERS

__all__ = [
    "ProcStat",
    "boot_time",
    "clock_ticks",
    "is_thread",
    "last_pid",
    "list_pids",
    "read_argv",
    "read_cwd",
    "read_markers",
    "read_stat",
]

_ENV_MAX = 1 << 20  # an environ larger than this is read no further (markers are near the start in practice)


@dataclass(frozen=True, slots=True)
class ProcStat:
    """What /proc/PID/stat and the directory's owner say about one process."""

    pid: int
    ppid: int
    comm: str
    tty: int
    start_ticks: int
    uid: int


def list_pids(proc: str = "/proc") -> set[int]:
    """The pids (thread-group leaders) in the process table now."""
    return {int(name) for name in os.listdir(proc) if name.isdigit()}


def read_stat(pid: int, proc: str = "/proc") -> ProcStat | None:
    """The process's stat line parsed, or None when it is gone."""
    try:
        fd = os.open(f"{proc}/{pid}/stat", os.O_RDONLY)
        try:
            raw = os.read(fd, 4096).decode("utf-8", "replace")
            uid = os.fstat(fd).st_uid
        finally:
            os.close(fd)
    except OSError:
        return None
    head, sep, rest = raw.rpartition(")")
    fields = rest.split()
    if not sep or len(fields) < 20:
        return None
    comm = head.partition("(")[2]
    return ProcStat(pid, int(fields[1]), comm, int(fields[4]), int(fields[19]), uid)


def last_pid(proc: str = "/proc") -> int | None:
    """The pid the kernel allocated last (processes and threads), from /proc/loadavg."""
    try:
        with open(f"{proc}/loadavg", "rb") as f:
            return int(f.read(128).split()[4])
    except (OSError, ValueError, IndexError):
        return None


def is_thread(pid: int, proc: str = "/proc") -> bool:
    """Whether `pid` is a thread of another process (reachable in /proc, but not listed there)."""
    try:
        with open(f"{proc}/{pid}/status", "rb") as f:
            head = f.read(1024)
    except OSError:
        return True  # gone: nothing to record
    for line in head.split(b"\n"):
        if line.startswith(b"Tgid:"):
            return int(line.split()[1]) != pid
    return False


def read_argv(pid: int, proc: str = "/proc") -> list[str]:
    """The process's argv (empty for a kernel thread or a process gone)."""
    try:
        with open(f"{proc}/{pid}/cmdline", "rb") as f:
            raw = f.read(1 << 17)
    except OSError:
        return []
    return [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a] if raw else []


def read_cwd(pid: int, proc: str = "/proc") -> str | None:
    """The process's working directory, when readable."""
    try:
        return os.readlink(f"{proc}/{pid}/cwd")
    except OSError:
        return None


def read_markers(pid: int, proc: str = "/proc") -> dict[str, str]:
    """The agent-marker variables of the process's initial environment, when readable."""
    try:
        with open(f"{proc}/{pid}/environ", "rb") as f:
            raw = f.read(_ENV_MAX)
    except OSError:
        return {}
    out: dict[str, str] = {}
    for item in raw.split(b"\0"):
        name, _, value = item.partition(b"=")
        key = name.decode("utf-8", "replace")
        if any(key == m or (m.endswith("_") and key.startswith(m)) for m in ENV_MARKERS):
            out[key] = value.decode("utf-8", "replace")
    return out


@cache
def clock_ticks() -> int:
    """Clock ticks per second (start times in stat are in these)."""
    return os.sysconf("SC_CLK_TCK")


@cache
def boot_time(proc: str = "/proc") -> float:
    """The boot time as epoch seconds."""
    with open(f"{proc}/stat") as f:
        for line in f:
            if line.startswith("btime "):
                return float(line.split()[1])
    return 0.0
