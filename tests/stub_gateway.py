"""A stand-in gateway for tests of what clients do with an odd answer: it answers one connection, then is gone."""

from __future__ import annotations

import contextlib
import socket
import threading
from pathlib import Path


def one_answer(path: Path, answer: bytes) -> threading.Thread:
    """Listen on the Unix socket `path`, answer the first connection with `answer` (raw bytes, head and body),
    then close and remove the socket (asking again finds nobody). Join the returned thread to wait for it."""
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))
    srv.listen(1)
    srv.settimeout(120)  # a client that never came: the thread still ends (a test process runs ~3,400 tests)

    def serve() -> None:
        # A client that gave up (its own timeout, a failed test) must not make this thread raise later,
        # inside whatever test runs then: what the client saw is what its test checks.
        with contextlib.suppress(OSError):
            conn, _ = srv.accept()
            with conn:
                conn.recv(65536)
                conn.sendall(answer)
        srv.close()
        with contextlib.suppress(FileNotFoundError):
            path.unlink()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return t
