"""Starting a daemon: detached from the caller's session and terminal, its output appended to a private log.

Used for a job's shepherd (by the gateway) and for the gateway a client autostarts, so it sits on a client's
first call: it imports nothing but `os` (frontdesk.proc, which runs commands to completion, costs ~10 ms more).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path

__all__ = ["spawn_detached"]


def spawn_detached(argv: Sequence[str], env: Mapping[str, str], log: Path) -> int:
    """Start `argv` (argv[0] is a path: no PATH search) in its own session; its pid.

    stdin is /dev/null; stdout and stderr are appended to `log` (created 0600). posix_spawn (vfork) keeps this
    cheap even when the caller is a large gateway process.
    """
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        return os.posix_spawn(
            argv[0],
            list(argv),
            env,
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_DUP2, fd, 1),
                (os.POSIX_SPAWN_DUP2, fd, 2),
            ],
            setsid=True,
        )
    finally:
        os.close(fd)
