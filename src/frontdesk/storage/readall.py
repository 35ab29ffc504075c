"""Whole-file reads of the storage operators (head, tail, wc, grep), bounded: a gateway is shared.

A file is read whole into memory, so one that never ends (a device such as /dev/zero, named or reached by a
symlink) or is larger than MAX_READ_BYTES would hold a worker and fill its memory: both are an OSError, which
the operators report as a per-path error. Small files cost no extra call (the check runs past the first read).
"""

from __future__ import annotations

import errno
import os
import stat

__all__ = ["MAX_READ_BYTES", "read_path"]

MAX_READ_BYTES = 1 << 30
"""The most bytes of one file the operators read."""


def read_path(path: bytes) -> bytes | None:
    """`Fs.read_named` less its charge: a path followed, read whole; None when it is a directory."""
    fd = os.open(path, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        return _read_all(fd, 1 << 16)
    except IsADirectoryError:
        return None
    finally:
        os.close(fd)


def _read_all(fd: int, hint: int) -> bytes:
    """The whole file; past its first `hint` bytes it must be a regular file of at most MAX_READ_BYTES."""
    data = os.read(fd, hint)
    if len(data) < hint:
        return data
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        raise OSError(errno.EINVAL, "not a regular file: the fs operators read files, not devices")
    chunks, size = [data], len(data)
    while chunk := os.read(fd, 1 << 20):
        size += len(chunk)
        if size > MAX_READ_BYTES:
            raise OSError(errno.EFBIG, f"larger than {MAX_READ_BYTES >> 20} MiB: run the real tool in a job")
        chunks.append(chunk)
    return b"".join(chunks)
