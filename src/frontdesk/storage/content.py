"""The content cache: the bytes of files in watched directories, kept per directory until an event arrives.

A file's contents are kept only while its directory is trusted (watched with inotify, no event since) and
only when the file has one link, so every write to it reaches that directory's watch. Contents read by a
question wait in `pending` and are checked (link count, size) by `settle()` after the answer is sent: the
check costs one fstatat per file, relative to its directory, charged to the question that read the file.
A directory's event drops all of its files at once (`drop`).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["ContentCache", "DirKey"]

DirKey = tuple[int, int, bytes]
"""(root dev, root ino, path below the root): a watched directory (see fs.py)."""

_NONE: dict[bytes, bytes] = {}


@dataclass
class ContentCache:
    """Files' bytes by directory and name, within `limit` bytes."""

    limit: int = 256 * 1024 * 1024
    size: int = 0
    by_dir: dict[DirKey, dict[bytes, bytes]] = field(default_factory=dict)
    pending: list[tuple[DirKey, bytes, list[tuple[bytes, bytes]]]] = field(default_factory=list)
    pending_size: int = 0

    def files_in(self, key: DirKey) -> dict[bytes, bytes]:
        """The kept files of a trusted directory (name -> bytes); read-only for the caller."""
        return self.by_dir.get(key, _NONE)

    def room(self) -> bool:
        return self.size + self.pending_size < self.limit

    def defer(self, key: DirKey, dpath: bytes, files: list[tuple[bytes, bytes]]) -> int:
        """Queue files read in a trusted directory for `settle()`; how many were queued (each costs a stat)."""
        if not files:
            return 0
        self.pending.append((key, dpath, files))
        self.pending_size += sum(len(d) for _, d in files)
        return len(files)

    def keep(self, key: DirKey, name: bytes, data: bytes) -> None:
        """Keep one file whose link count the caller has checked."""
        if self.size + len(data) <= self.limit:
            self.by_dir.setdefault(key, {})[name] = data
            self.size += len(data)

    def drop(self, key: DirKey) -> None:
        self.size -= sum(len(d) for d in self.by_dir.pop(key, _NONE).values())

    def clear(self) -> None:
        self.by_dir.clear()
        self.size = 0

    def settle(self, trusted: Callable[[DirKey], bool]) -> None:
        """Keep the pending files that have one link, of directories still trusted (one fstatat each)."""
        pending, self.pending, self.pending_size = self.pending, [], 0
        for key, dpath, files in pending:
            if not trusted(key):
                continue
            try:
                dfd = os.open(dpath, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                for name, data in files:
                    if self._single(dfd, name, len(data)):
                        self.keep(key, name, data)
            finally:
                os.close(dfd)

    @staticmethod
    def _single(dfd: int, name: bytes, size: int) -> bool:
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except OSError:
            return False
        return stat.S_ISREG(st.st_mode) and st.st_nlink == 1 and st.st_size == size
