"""What runs where, from /proc: a process's group, terminal and start time. Stdlib only, Linux.

The tmux channel types into a pane only when the pane's foreground process group is the registered
agent process (same pid *and* same start time, so a recycled pid never passes): see channels/tmux.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ProcStat", "proc_stat", "start_time", "with_start"]


@dataclass(frozen=True)
class ProcStat:
    """The fields of /proc/<pid>/stat that identify a process and its terminal."""

    pid: int
    pgrp: int
    tty_nr: int
    tpgid: int
    """The foreground process group of the process's controlling terminal (-1 without one)."""
    start: int
    """Start time in clock ticks after boot: with the pid, names one process for the boot's lifetime."""


def proc_stat(pid: int) -> ProcStat | None:
    """The process's stat fields, or None when it does not exist (or /proc is not readable)."""
    try:
        with open(f"/proc/{int(pid)}/stat", "rb") as fh:
            raw = fh.read().decode(errors="replace")
    except (OSError, ValueError, TypeError):
        return None
    _, sep, rest = raw.rpartition(")")  # comm may hold spaces and parentheses: split after the last one
    fields = rest.split()
    if not sep or len(fields) < 20:
        return None
    try:
        # after "pid (comm)": state ppid pgrp session tty_nr tpgid ... starttime is the 20th field here
        return ProcStat(int(pid), int(fields[2]), int(fields[4]), int(fields[5]), int(fields[19]))
    except ValueError:
        return None


def start_time(pid: object) -> int | None:
    """The start time of a live process (None when the pid is not a live process)."""
    if isinstance(pid, bool) or not isinstance(pid, int | str):
        return None
    try:
        st = proc_stat(int(pid))
    except ValueError:
        return None
    return st.start if st else None


def with_start(reach: dict[str, Any]) -> dict[str, Any]:
    """`reach` with the agent process's start time beside its pid (pid + start name one process).

    Read here, while the process that registered is alive; the tmux channel types only into a pane whose
    foreground is that very process (issue 19). A pid that is not a live process keeps no start time.
    """
    pid = reach.get("pid")
    if pid is None:
        return reach
    try:
        pid = int(pid)
    except (TypeError, ValueError):
        return {k: v for k, v in reach.items() if k not in ("pid", "pid_start")}
    start = start_time(pid)
    return {**reach, "pid": pid, "pid_start": start}
