"""Whom a client trusts at a gateway socket, before it connects: the one rule, as a reason to refuse or None.

paths.check_rendezvous raises RendezvousRefused with it; the CLI's fast path (cli/fast.py) falls back to the full
client on it. Imports only os and stat: the fast path pays nothing for pathlib or the error tree.
"""

from __future__ import annotations

import os
import stat

__all__ = ["refusal"]


def _owned(path: str, st: os.stat_result, trusted: tuple[int, ...], what: str) -> str | None:
    if st.st_uid not in trusted:
        return f"refusing {what} {path}: it belongs to uid {st.st_uid}, not to you or the service (nothing was sent)"
    if not stat.S_ISDIR(st.st_mode):
        return None  # a socket's write bit means "may connect" (0666 in facility mode); its directory guards it
    sticky_root = st.st_mode & stat.S_ISVTX and st.st_uid == 0
    if st.st_mode & 0o022 and not sticky_root:
        return f"refusing {what} {path}: others may write to it (mode {stat.S_IMODE(st.st_mode):04o}; nothing was sent)"
    return None


def refusal(path: str, trusted: tuple[int, ...]) -> str | None:
    """Why a client must not connect to `path`, or None: the socket and its directory belong to a trusted uid and
    nobody else can swap them. A missing directory or socket is no reason (connecting then fails, sending nothing);
    other OSErrors (a directory it may not search) propagate."""
    parent = os.path.dirname(path) or "."
    try:
        dst = os.stat(parent)
    except FileNotFoundError:
        return None
    why = _owned(parent, dst, trusted, "the socket directory")
    if why is not None:
        return why
    try:
        sst = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISSOCK(sst.st_mode):
        return f"refusing {path}: not a socket (nothing was sent)"
    return _owned(path, sst, trusted, "the socket")
