"""Reading the end of a job's log files (the only log I/O reports, memory and the API need)."""

from __future__ import annotations

import os

__all__ = ["read_tail"]


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
