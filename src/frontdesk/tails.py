"""Reading the end of a job's log files (the only log I/O reports, memory and the API need)."""

from __future__ import annotations

import os

__all__ = ["read_tail", "read_tail_lines"]


def read_tail(path: str | os.PathLike[str] | None, max_bytes: int = 64 * 1024) -> str:
    """The last `max_bytes` of a file as text ("" when there is no such file)."""
    if not path:
        return ""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - max_bytes))
            return fh.read().decode(errors="replace")
    except OSError:
        return ""


def read_tail_lines(path: str | os.PathLike[str] | None, lines: int, max_bytes: int = 16 * 1024 * 1024) -> list[str]:
    """The last `lines` lines of a file: reads back in chunks until it has them, the file's start, or
    `max_bytes` (so `logs --tail N` gives N lines whenever the file has them and they fit in max_bytes)."""
    if not path or lines <= 0:
        return []
    try:
        with open(path, "rb") as fh:
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
