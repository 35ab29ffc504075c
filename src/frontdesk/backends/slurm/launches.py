"""An sbatch that may outlive its gateway: the launch record written before it runs, and the process it names.

Before sbatch runs, `<home>/slurm-ids/launches/<key>` (0600, JSON) records the attempt's tag, the last word of
the job's `--comment`: `fd-N.A@<gateway>#<nonce>`, the nonce new for every launch, so a job someone submitted
earlier with the same name or tag is never it. Once the process exists, and before it runs (proc's gate), its
pid, its start time (clock ticks since boot, /proc/PID/stat field 22) and the boot id are added: a gateway
restarted while that sbatch still runs (slurmctld slow to answer) waits for it, and only that process: a pid
reused by another process has another start time. A gateway that dies before the pid is written leaves an
sbatch that never runs (the gate reads EOF).

`LOCK` orders these writes against the record sweep (sweep.py): a key whose files the sweep found settled is
not deleted once a new launch of it began.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import threading
from dataclasses import asdict, dataclass
from pathlib import Path

from frontdesk import procid
from frontdesk.procid import ProcId

__all__ = ["LAUNCHES", "LOCK", "Launch", "begin", "kill", "launch_path", "read", "running", "started"]

LAUNCHES = "launches"
LOCK = threading.Lock()
"""Held while a launch's files are written and while the sweep checks and deletes one key's files."""
MAX_BYTES = 4096


@dataclass(frozen=True)
class Launch:
    """One run of sbatch for an attempt (or an array, under its first task's key)."""

    tag: str
    """The last word of the job's --comment: `fd-N.A@<gateway>#<nonce>` (`fd-N.A[]@...` for an array)."""
    at: float
    pid: int | None = None
    start: int | None = None
    """The process's start time in clock ticks since boot (with `pid` and `boot`: that process, no other)."""
    boot: str | None = None


def launch_path(home: Path, key: str) -> Path:
    """Where attempt `key`'s launch record is kept."""
    return home / "slurm-ids" / LAUNCHES / key


def _write(path: Path, launch: Launch) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(json.dumps(asdict(launch)))
    os.replace(tmp, path)


def begin(home: Path, key: str, tag: str, now: float) -> Launch:
    """Record a new launch of `key` (its tag gains a fresh nonce) before sbatch is started."""
    launch = Launch(tag=f"{tag}#{secrets.token_hex(8)}", at=now)
    with LOCK:
        _write(launch_path(home, key), launch)
    return launch


def started(home: Path, key: str, launch: Launch, pid: int) -> None:
    """Add the process's pid, start time and boot id (called by proc between fork and run)."""
    with LOCK:
        _write(launch_path(home, key), Launch(launch.tag, launch.at, pid, procid.start_ticks(pid), procid.boot_id()))


def read(home: Path, key: str) -> Launch | None:
    """Attempt `key`'s launch record (None: none, or not one the gateway wrote)."""
    try:
        with open(launch_path(home, key), encoding="utf-8", errors="replace") as fh:
            data = json.loads(fh.read(MAX_BYTES))
        launch = Launch(**data)
    except (OSError, ValueError, TypeError):
        return None
    ok = isinstance(launch.tag, str) and isinstance(launch.at, int | float)
    ints = all(v is None or (isinstance(v, int) and v > 0) for v in (launch.pid, launch.start))
    return launch if ok and ints and (launch.boot is None or isinstance(launch.boot, str)) else None


def _proc(launch: Launch) -> ProcId | None:
    if launch.pid is None or launch.start is None or launch.boot is None:
        return None  # written before the process existed: nothing of it runs
    return ProcId(launch.pid, launch.start, launch.boot)


def running(launch: Launch) -> bool:
    """Whether the sbatch of this launch still runs (its pid, with the same start time, this boot)."""
    proc = _proc(launch)
    return proc is not None and procid.running(proc)


def kill(launch: Launch) -> None:
    """SIGKILL the launch's sbatch, if that very process still runs (procid.send: a pidfd, no pid reused)."""
    proc = _proc(launch)
    if proc is not None:
        procid.send(proc, signal.SIGKILL)
