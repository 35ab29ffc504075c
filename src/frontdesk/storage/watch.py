"""inotify for the listing and content cache: a watched directory needs no stat until something changes in it.

The kernel queues an inotify event inside the system call that changes a directory or a file in it, so an
event drained at the start of a question covers every change that finished before the question began. Any
event on a directory's watch (a name created, deleted, moved; a file in it written or chmod'ed; the
directory itself chmod'ed, moved or deleted) marks it dirty; a queue overflow marks everything dirty. Where
inotify is missing or out of watches, the cache falls back to checking the directory's mtime/ctime (fs.py).
Changes made on another host of a network filesystem are not seen by inotify: run the worker with watching
off there (`[storage] inotify = false`).
"""

from __future__ import annotations

import ctypes
import os
import struct

__all__ = ["Key", "Watcher"]

Key = tuple[int, int, bytes]
"""What the cache calls a directory: (root dev, root ino, path below the root)."""

_IN_MODIFY, _IN_ATTRIB, _IN_CLOSE_WRITE = 0x2, 0x4, 0x8
_IN_MOVED_FROM, _IN_MOVED_TO, _IN_CREATE, _IN_DELETE = 0x40, 0x80, 0x100, 0x200
_IN_DELETE_SELF, _IN_MOVE_SELF, _IN_UNMOUNT, _IN_Q_OVERFLOW, _IN_IGNORED = 0x400, 0x800, 0x2000, 0x4000, 0x8000
_IN_ONLYDIR, _IN_DONT_FOLLOW = 0x01000000, 0x02000000
_MASK = (
    _IN_MODIFY | _IN_ATTRIB | _IN_CLOSE_WRITE | _IN_MOVED_FROM | _IN_MOVED_TO | _IN_CREATE | _IN_DELETE
    | _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_ONLYDIR | _IN_DONT_FOLLOW
)  # fmt: skip
_EVENT = struct.Struct("iIII")


class Watcher:
    """Watches directories; `changed()` says which have seen an event since the last call."""

    def __init__(self) -> None:
        libc = ctypes.CDLL(None, use_errno=True)  # the interpreter's own libc (no ldconfig lookup)
        self._add = libc.inotify_add_watch
        self._add.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32)
        self._rm = libc.inotify_rm_watch
        self._rm.argtypes = (ctypes.c_int, ctypes.c_int)
        fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1 failed")
        self.fd = fd
        self._keys: dict[int, set[Key]] = {}
        self._wds: dict[Key, int] = {}

    def watch(self, path: bytes, key: Key) -> bool:
        """Watch a directory under `key` (True), or say it cannot be (out of watches, not a directory)."""
        if key in self._wds:
            return True
        wd = self._add(self.fd, os.path.abspath(path), _MASK)
        if wd < 0:
            return False
        self._keys.setdefault(wd, set()).add(key)  # one inode reached under several keys: all of them
        self._wds[key] = wd
        return True

    def unwatch(self, key: Key) -> None:
        """Stop watching under `key` (its directory may now be another one)."""
        wd = self._wds.pop(key, None)
        if wd is None:
            return
        keys = self._keys.get(wd, set())
        keys.discard(key)
        if not keys:
            self._keys.pop(wd, None)
            self._rm(self.fd, wd)

    def changed(self) -> set[Key] | None:
        """Keys of the directories with events since the last call (no longer watched); None: lost track."""
        out: set[Key] = set()
        while True:
            try:
                buf = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return out
            pos = 0
            while pos + _EVENT.size <= len(buf):
                wd, mask, _cookie, length = _EVENT.unpack_from(buf, pos)
                pos += _EVENT.size + length
                if mask & _IN_Q_OVERFLOW:
                    self.forget_all()
                    return None
                keys = self._keys.pop(wd, set())
                for key in keys:
                    self._wds.pop(key, None)
                out |= keys
                if keys and not mask & _IN_IGNORED:
                    self._rm(self.fd, wd)

    def forget_all(self) -> None:
        for wd in self._keys:
            self._rm(self.fd, wd)
        self._keys.clear()
        self._wds.clear()

    def close(self) -> None:
        os.close(self.fd)
