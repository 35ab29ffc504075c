"""The end-notice channel: a shepherd tells its gateway "attempt B ended" in one datagram.

`<home>/local/ends.sock` is a Unix datagram socket (0600 in the gateway's 0700 home) that `LocalBackend`
binds while it runs. A shepherd sends the backend id of its attempt (ASCII, nothing else) once result.json
is stored, and exits without waiting for an answer; the gateway re-queries that attempt at once. (It sends the
same notice after it froze or thawed its job for a trial: the re-query reads SUSPENDED or RUNNING.) It replaces
an HTTP `POST /v1/notify` (connect, request, middleware, answer): about 2 ms of both processes' CPU on the
path from a job's end to its waiter.

Only the shepherd the gateway knows for that attempt is heard: the kernel attaches the sender's pid and uid
to each datagram (SO_PASSCRED), and a notice counts only from our own uid (or root) and the attempt's
shepherd pid. Anything else is dropped; a notice is only ever a hint (the attempt's files are the truth),
and a lost one is found by the tick. Where the path is too long for a Unix socket, or binding fails, there
is no channel and shepherds use `POST /v1/notify` as before.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import struct
from collections.abc import Callable
from pathlib import Path

__all__ = ["MAX_NOTICE", "EndNotices", "usable_path"]

log = logging.getLogger("frontdesk.local")

MAX_NOTICE = 64
"""Longest notice taken (a backend id is `<job>.<attempt>`); longer datagrams are dropped."""

_UCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid
_SUN_PATH_MAX = 107


def usable_path(path: Path) -> bool:
    """Whether `path` fits a Unix socket address (108 bytes with its NUL)."""
    return len(os.fsencode(path)) <= _SUN_PATH_MAX


class EndNotices:
    """The gateway's end of the channel: bound at start, read on the event loop, removed at stop."""

    def __init__(self, path: Path, shepherd_of: Callable[[str], int | None], on_notice: Callable[[str], None]) -> None:
        self.path = path
        self._shepherd_of = shepherd_of  # backend id -> the pid of its shepherd (None: not running here)
        self._on_notice = on_notice
        self._sock: socket.socket | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._uids = {os.getuid(), 0}
        self.received = 0
        """Notices taken (each one re-queries its attempt now)."""
        self.dropped = 0
        """Datagrams refused (a stranger, a wrong pid, a malformed notice): counted, never acted on."""

    @property
    def bound(self) -> bool:
        """Whether shepherds can reach this channel now."""
        return self._sock is not None

    def open(self, loop: asyncio.AbstractEventLoop) -> bool:
        """Bind the socket (replacing a stale file: the state lock makes this gateway the home's only one)."""
        if not usable_path(self.path):
            return False
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)  # before bind: every datagram carries them
            sock.setblocking(False)
            self.path.unlink(missing_ok=True)
            old = os.umask(0o177)
            try:
                sock.bind(str(self.path))
            finally:
                os.umask(old)
        except OSError as exc:
            sock.close()
            log.warning("no end-notice socket at %s (%s): shepherds notify over HTTP", self.path, exc)
            return False
        self._sock, self._loop = sock, loop
        loop.add_reader(sock.fileno(), self._readable)
        return True

    def close(self) -> None:
        """Stop reading and remove the socket file (shepherds then fall back to HTTP, or the tick)."""
        if self._sock is None:
            return
        if self._loop is not None:
            self._loop.remove_reader(self._sock.fileno())
        self._sock.close()
        self._sock = None
        try:
            self.path.unlink()
        except OSError:
            pass

    def _readable(self) -> None:
        """Take every queued datagram (a burst of ends is drained in one pass)."""
        assert self._sock is not None
        while True:
            try:
                data, anc, _flags, _addr = self._sock.recvmsg(MAX_NOTICE + 1, socket.CMSG_SPACE(_UCRED.size))
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                log.warning("end-notice socket: %s", exc)
                return
            bid = self.accepted(data, anc)
            if bid is None:
                self.dropped += 1
            else:
                self.received += 1
                self._on_notice(bid)

    def accepted(self, data: bytes, anc: list[tuple[int, int, bytes]]) -> str | None:
        """The backend id of a notice from that attempt's own shepherd, else None."""
        creds = [c for lvl, typ, c in anc if lvl == socket.SOL_SOCKET and typ == socket.SCM_CREDENTIALS]
        if len(creds) != 1 or len(creds[0]) < _UCRED.size or len(data) > MAX_NOTICE:
            return None
        pid, uid, _gid = _UCRED.unpack_from(creds[0])
        try:
            bid = data.decode("ascii")
        except UnicodeDecodeError:
            return None
        if uid not in self._uids or not pid or self._shepherd_of(bid) != pid:
            return None
        return bid
