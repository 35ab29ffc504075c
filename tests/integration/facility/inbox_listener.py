"""Run as a test user: a stand-in for Claude Code's inbox socket. Listens on PATH (0600), accepts one connection,
logs the peer's SO_PEERCRED uid and every byte to LOG (JSON), closes without a reply (success, as the harness).

argv: SOCKET_PATH LOG_PATH. Prints "ready" once listening.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import sys


def main() -> int:
    path, log = sys.argv[1], sys.argv[2]
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    os.chmod(path, 0o600)
    srv.listen(4)
    print("ready", flush=True)
    conn, _ = srv.accept()
    _pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    data = b""
    while chunk := conn.recv(65536):
        data += chunk
    conn.close()
    with open(log, "w") as fh:
        json.dump({"peer_uid": uid, "data": data.decode(errors="replace")}, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
