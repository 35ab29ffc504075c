"""Run as the attacker: listen on a socket path, log every byte received, answer a forged COMPLETED report.

argv: SOCKET_PATH LOG_PATH. Prints "ready" once listening. A client that checks the rendezvous never
connects, so LOG_PATH never appears.
"""

from __future__ import annotations

import json
import os
import socket
import sys


def main() -> int:
    path, log = sys.argv[1], sys.argv[2]
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    os.chmod(path, 0o777)
    srv.listen(16)
    print("ready", flush=True)
    forged = json.dumps({"id": 1, "state": "COMPLETED", "exit_code": 0, "text": "forged"}).encode()
    while True:
        conn, _ = srv.accept()
        data = conn.recv(1 << 20)
        with open(log, "ab") as fh:
            fh.write(b"CONNECTION " + data + b"\n")
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(forged)}\r\n\r\n"
        conn.sendall(head.encode() + forged)
        conn.close()


if __name__ == "__main__":
    sys.exit(main())
