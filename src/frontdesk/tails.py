"""Reading the end of a job's log files (the only log I/O reports, memory and the API need)."""

from __future__ import annotations

import os
import stat

__all__ = ["open_owned", "read_tail", "read_tail_lines"]


def open_owned(path: str | os.PathLike[str], owner: int | None) -> int:
    """A descriptor on a regular file the job's user could read; OSError otherwise.

    Never blocks (a FIFO named as the output is refused, not waited on). A root gateway reading another
    user's job (`owner`, that user's uid) reads only files that user owns: an output path the user chose
    (sbatch -o, a symlink in their directory) never hands them a file only root may read.

    The path is first taken with O_PATH, which opens nothing: only a regular file (the user's, where that
    matters) is then opened, through that very descriptor. Opening is itself an action on a device or a FIFO
    (a watchdog arms, a tape rewinds, a blocked writer is let go), and `sbatch -o /dev/...` names any."""
    where = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        st = os.fstat(where)
        if not stat.S_ISREG(st.st_mode) or (owner not in (None, 0) and os.geteuid() == 0 and st.st_uid != owner):
            raise PermissionError(f"{os.fspath(path)!r}: not a log file of the job's user")
        return os.open(f"/proc/self/fd/{where}", os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    finally:
        os.close(where)


def read_tail(path: str | os.PathLike[str] | None, max_bytes: int = 64 * 1024, *, owner: int | None = None) -> str:
    """The last `max_bytes` of a file as text ("" when there is no such file, or not one `owner` owns)."""
    if not path:
        return ""
    try:
        with os.fdopen(open_owned(path, owner), "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - max_bytes))
            return fh.read().decode(errors="replace")
    except OSError:
        return ""


def read_tail_lines(
    path: str | os.PathLike[str] | None, lines: int, max_bytes: int = 16 * 1024 * 1024, *, owner: int | None = None
) -> list[str]:
    """The last `lines` lines of a file: reads back in chunks until it has them, the file's start, or
    `max_bytes` (so `logs --tail N` gives N lines whenever the file has them and they fit in max_bytes).
    `owner` as for `read_tail`."""
    if not path or lines <= 0:
        return []
    try:
        with os.fdopen(open_owned(path, owner), "rb") as fh:
            end = fh.seek(0, os.SEEK_END)
            pos, data = end, b""
            while pos > 0 and data.count(b"\n") <= lines and end - pos < max_bytes:
                step = min(64 * 1024 * (1 + (end - pos) // (256 * 1024)), pos, max_bytes - (end - pos))
                pos -= step
                fh.seek(pos)
                data = fh.read(step) + data
    except OSError:
        return []
    out = data.decode(errors="replace").splitlines()
    if pos > 0 and out:
        out = out[1:]  # the first line read may be cut
    return out[-lines:]
