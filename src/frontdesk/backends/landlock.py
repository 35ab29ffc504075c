"""Landlock (Linux 5.13+): limit where a job may write, from inside the job's own process, before exec.

`restrict_writes(paths)` is meant for the child side of the embedded executor's launcher (after fork,
before exec): reads and execution stay unrestricted; creating, writing, truncating, renaming and deleting
are allowed only beneath `paths` (plus the harmless devices: /dev/null, ttys, GPUs). The restriction is
inherited by every descendant and cannot be lifted. Where the kernel lacks Landlock (or it is disabled)
it returns False and changes nothing, so the caller can log one clear line (`landlock_abi()` tells which).
Stdlib only (ctypes); no exception escapes.
"""

from __future__ import annotations

import ctypes
import glob
import os
import platform

__all__ = ["landlock_abi", "restrict_writes", "describe", "DEVICE_PATHS"]

_SYS_CREATE_RULESET = 444  # same number on every architecture (new syscalls share one table)
_SYS_ADD_RULE = 445
_SYS_RESTRICT_SELF = 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
_O_PATH = getattr(os, "O_PATH", 0o10000000)

_WRITE_FILE = 1 << 1
_REMOVE_DIR = 1 << 4
_REMOVE_FILE = 1 << 5
_MAKE_ALL = sum(1 << b for b in range(6, 13))  # char, dir, reg, sock, fifo, block, sym
_REFER = 1 << 13  # ABI 2
_TRUNCATE = 1 << 14  # ABI 3
_FILE_RIGHTS = _WRITE_FILE | _TRUNCATE

DEVICE_PATHS = (
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/pts",
    "/dev/ptmx",
    "/dev/random",
    "/dev/urandom",
    "/dev/nvidia*",
    "/dev/nvidia-caps",
    "/dev/dri",
    "/dev/kfd",
    "/dev/infiniband",
    "/dev/fuse",
)


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc() -> ctypes.CDLL | None:
    if platform.system() != "Linux":
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        return libc
    except (OSError, AttributeError):
        return None


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 where Landlock is missing or disabled."""
    libc = _libc()
    if libc is None:
        return 0
    try:
        abi = libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except Exception:  # noqa: BLE001 - a missing syscall symbol means no Landlock
        return 0
    return int(abi) if abi > 0 else 0


def describe(writable: list[str]) -> str:
    """The one log line a launcher writes before starting a job that asked for the write sandbox."""
    abi = landlock_abi()
    if abi <= 0:
        return (
            "landlock: not available on this kernel (needs Linux 5.13+ with landlock in the LSM list); "
            "the job runs without a write sandbox"
        )
    return f"landlock ABI {abi}: the job may write only beneath {', '.join(writable) or '(nothing)'}"


def _handled(abi: int) -> int:
    rights = _WRITE_FILE | _REMOVE_DIR | _REMOVE_FILE | _MAKE_ALL
    if abi >= 2:
        rights |= _REFER
    if abi >= 3:
        rights |= _TRUNCATE
    return rights


def restrict_writes(writable: list[str], devices: bool = True) -> bool:
    """Allow writes only beneath `writable` for this process and its children; False if unsupported."""
    try:
        return _restrict(writable, devices)
    except Exception:  # noqa: BLE001 - never raise in a child about to exec
        return False


def _restrict(writable: list[str], devices: bool) -> bool:
    libc = _libc()
    abi = landlock_abi()
    if libc is None or abi <= 0:
        return False
    handled = _handled(abi)
    attr = _RulesetAttr(handled)
    ruleset_fd = libc.syscall(
        _SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), ctypes.c_uint32(0)
    )
    if ruleset_fd < 0:
        return False
    try:
        paths = list(writable)
        if devices:
            for pattern in DEVICE_PATHS:
                paths.extend(glob.glob(pattern) if "*" in pattern else [pattern])
        for path in paths:
            _add_path(libc, int(ruleset_fd), path, handled)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return False
        return bool(libc.syscall(_SYS_RESTRICT_SELF, ctypes.c_int(ruleset_fd), ctypes.c_uint32(0)) == 0)
    finally:
        os.close(int(ruleset_fd))


def _add_path(libc: ctypes.CDLL, ruleset_fd: int, path: str, handled: int) -> None:
    try:
        fd = os.open(path, _O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # a missing path grants nothing
    try:
        is_dir = os.path.isdir(path)
        rule = _PathBeneathAttr(handled if is_dir else handled & _FILE_RIGHTS, fd)
        libc.syscall(
            _SYS_ADD_RULE,
            ctypes.c_int(ruleset_fd),
            ctypes.c_uint32(_RULE_PATH_BENEATH),
            ctypes.byref(rule),
            ctypes.c_uint32(0),
        )
    finally:
        os.close(fd)
