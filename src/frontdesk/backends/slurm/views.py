"""squeue answers kept rendered in per-user files, for the `sh` squeue shim's `cat` fast path.

A shim call costs the login node a `sh` and a `cat` (~1.6 ms of CPU) instead of a Python start (~6 ms) or the
real squeue (~3 ms and two controller RPCs). Layout, next to the gateway's socket:

    <socket dir>/squeue-views/      0711, the gateway's: nobody else can list or write it
        fresh                       the /proc/uptime until which the files may be served (hundredths of a
                                    second), and the boot id it counts from (a reboot makes every file stale)
        <uid>#<arg>#<arg>...        squeue's stdout for that user and command line; 0600, owned by that user

A command line gets a file when a shim asks it through the socket (the fallback path) and the answer is
plain (exit 0, nothing on stderr, no `-l` clock line, no SQUEUE_* variables). Every snapshot re-renders
every file (written to a fresh temporary name, then renamed: never changed in place) before `fresh` moves
on to the snapshot's time + `refresh_seconds`, so a file is never older than a socket answer may be. The
gateway asks the controller for a new snapshot only after an interval in which some file was read (its
atime), so polls no one makes cost no queries; a file not read for IDLE_DROP seconds is dropped. (On a
noatime mount no read is seen: a file then lives one interval per socket call.) The shim serves a file
only when it owns it (`test -O`) and `fresh` is ahead of /proc/uptime in the same boot; a stopped gateway
removes `fresh`, a dead or stuck one lets it run out, and a controller that does not answer stops it
moving: in each case the shim asks the socket.
"""

from __future__ import annotations

import errno
import os
import secrets
import string
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from frontdesk import procid

__all__ = [
    "IDLE_DROP",
    "MAX_NAME",
    "MAX_PER_USER",
    "SAFE",
    "SEPARATOR",
    "Registration",
    "ViewFiles",
    "boot_id",
    "uptime",
    "view_name",
]

SAFE = frozenset(string.ascii_letters + string.digits + "%.,:=_+|;@ -")
"""Characters a command line's arguments may hold to get a file (the shim's `case` pattern says the same)."""
SEPARATOR = "#"
"""Between the arguments in a file name: not in SAFE, so each command line has one name."""
MAX_NAME = 200
"""Longest file name (bytes); longer command lines go to the socket."""
MAX_PER_USER = 256
"""Command lines one user may have rendered at once (each costs the gateway a rendering per snapshot); more
are answered through the socket, as before."""
MAX_FILE_BYTES = 1 << 20
"""A longer answer is not kept in a file (it is re-rendered every snapshot): the socket answers it each time."""
MAX_USER_BYTES = 16 << 20
"""What one user's files may hold together: 256 command lines of wide fields were gigabytes per snapshot."""
IDLE_DROP = 60.0
"""Seconds a file may go unread before it is dropped (and its rendering stops)."""
FRESH = "fresh"


def view_name(uid: int, argv: Sequence[str]) -> str | None:
    """The file name of `argv`'s answer for `uid`, None when the shim would not look for one (pure)."""
    if any(not a or not SAFE.issuperset(a) for a in argv):
        return None
    name = str(uid) + "".join(SEPARATOR + a for a in argv)
    return name if len(name.encode()) <= MAX_NAME else None


def uptime() -> float:
    """Seconds since boot as /proc/uptime says (the clock the shim reads with the shell's `read`)."""
    with open("/proc/uptime", "rb") as f:
        return float(f.read().split()[0])


def boot_id() -> str:
    """This boot's id (procid.boot_id; "" when unknown: a view then never reads as fresh): /proc/uptime restarts
    at each boot."""
    return procid.boot_id() or ""


@dataclass
class Registration:
    """One (user, command line) whose answer is kept in a file."""

    uid: int
    argv: tuple[str, ...]
    name: str
    caller: Any
    last_read: float = field(default_factory=time.time)
    size: int = 0
    """Bytes of the answer last written."""


class ViewFiles:
    """The directory of rendered answers; every write is a new file renamed into place."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.registrations: dict[str, Registration] = {}
        self._ready = False

    def prepare(self) -> bool:
        """Make the directory (0711, ours) and empty it; False when it cannot be ours."""
        if self._ready:
            return True
        try:
            self.directory.mkdir(mode=0o711, exist_ok=True)
            st = self.directory.lstat()
            if not self.directory.is_dir() or self.directory.is_symlink() or st.st_uid != os.geteuid():
                return False
            os.chmod(self.directory, 0o711)
            for entry in os.listdir(self.directory):
                (self.directory / entry).unlink(missing_ok=True)
        except OSError:
            return False
        self._ready = True
        return True

    def register(self, uid: int, argv: Sequence[str], caller: Any) -> Registration | None:
        """Keep `argv`'s answer for `uid` in a file from now on (None: not a command line the shim looks up)."""
        name = view_name(uid, argv)
        if name is None or not self.prepare():
            return None
        reg = self.registrations.get(name)
        if reg is None:
            if sum(1 for r in self.registrations.values() if r.uid == uid) >= MAX_PER_USER:
                return None
            reg = self.registrations[name] = Registration(uid, tuple(argv), name, caller)
        reg.last_read = time.time()
        return reg

    def write(self, reg: Registration, text: str) -> None:
        """Replace `reg`'s file with `text`, readable by its user only; OSError (EFBIG) past MAX_FILE_BYTES or
        the user's MAX_USER_BYTES (the caller drops the registration)."""
        data = text.encode()
        others = sum(r.size for r in self.registrations.values() if r.uid == reg.uid and r is not reg)
        if len(data) > MAX_FILE_BYTES or others + len(data) > MAX_USER_BYTES:
            raise OSError(errno.EFBIG, "a squeue answer too large to keep in a file")
        self._atomic(reg.name, data, 0o600, reg.uid)
        reg.size = len(data)

    def set_fresh(self, until: float) -> None:
        """Let the shims serve the files until /proc/uptime reaches `until` (in this boot): written in
        hundredths, /proc/uptime's own resolution, which the shim reads without its dot."""
        self._atomic(FRESH, b"%d\n%s\n" % (int(until * 100), boot_id().encode()), 0o644, None)

    def drop(self, reg: Registration) -> None:
        """Stop rendering `reg` and remove its file."""
        self.registrations.pop(reg.name, None)
        (self.directory / reg.name).unlink(missing_ok=True)

    def expire(self, now: float) -> bool:
        """Drop the files nobody read for IDLE_DROP seconds; whether any was read since it was last written
        (a read after a write moves atime past mtime, on relatime and strictatime mounts)."""
        read = False
        for reg in list(self.registrations.values()):
            try:
                st = os.stat(self.directory / reg.name)
            except OSError:
                continue
            if st.st_atime_ns > st.st_mtime_ns:
                reg.last_read, read = now, True
            elif now - reg.last_read > IDLE_DROP:
                self.drop(reg)
        return read

    def close(self) -> None:
        """Stop serving: `fresh` first (shims fall back at once), then every file."""
        if not self._ready:
            return
        (self.directory / FRESH).unlink(missing_ok=True)
        for reg in list(self.registrations.values()):
            self.drop(reg)

    def _atomic(self, name: str, data: bytes, mode: int, uid: int | None) -> None:
        tmp = self.directory / f".tmp-{secrets.token_hex(8)}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
        try:
            if uid is not None and uid != os.geteuid():
                os.fchown(fd, uid, -1)
            os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        except OSError:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise
        os.close(fd)
        os.replace(tmp, self.directory / name)
