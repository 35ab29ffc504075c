"""Write one message into a session's inbox socket as the session's user (a short-lived child of a root gateway).

`python -P -m frontdesk.agents.channels.inbox_send --uid U` starts as root, drops to U (its groups, gid, uid),
then connects: the kernel checks U's right to reach the socket (a directory U cannot open stays closed), the
listener's SO_PEERCRED must be U (identity.check_inbox_socket), and the listener sees U, not root, as its peer.
Input on stdin (never argv, it holds the inbox token): `{"socket": PATH, "payload": TEXT}`. Output on stdout:
the listener's reply (up to 4 KiB). Exit 0 when written, 1 with one line on stderr otherwise.
"""

from __future__ import annotations

import argparse
import json
import socket
import struct  # noqa: F401  (paths.peer_ids imports it lazily: after the drop it might not be readable)
import sys

# Everything is imported before the drop: the interpreter's own library may be one the user cannot read.
from frontdesk.backends.runas import RunAs, drop
from frontdesk.identity import check_inbox_socket

__all__ = ["main", "send"]

_REPLY_MAX = 4096


def send(path: str, payload: bytes, uid: int, timeout: float = 3.0) -> bytes:
    """As the current process (already `uid`): connect after the owner checks, write, read the reply."""
    sock = check_inbox_socket(path, uid)
    with sock:
        sock.settimeout(timeout)
        sock.sendall(payload)
        sock.shutdown(socket.SHUT_WR)  # the harness reads to the end before it takes the message
        reply = b""
        while len(reply) < _REPLY_MAX:
            chunk = sock.recv(_REPLY_MAX - len(reply))
            if not chunk:
                break
            reply += chunk
    return reply


def main(argv: list[str] | None = None) -> int:
    """Drop to --uid, then deliver stdin's message; one line on stderr when it could not."""
    parser = argparse.ArgumentParser(prog="inbox_send")
    parser.add_argument("--uid", type=int, required=True)
    uid = int(parser.parse_args(argv).uid)
    try:
        request = json.loads(sys.stdin.read())
        path, payload = str(request["socket"]), str(request["payload"]).encode()
        drop(RunAs.of_uid(uid))
        reply = send(path, payload, uid)
    except Exception as exc:  # one line, never a traceback: the gateway only needs "not written"
        sys.stderr.write(f"inbox_send: {getattr(exc, 'message', None) or exc}\n")
        return 1
    sys.stdout.buffer.write(reply)
    return 0


if __name__ == "__main__":
    sys.exit(main())
