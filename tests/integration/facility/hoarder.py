"""Run as a test user: open N raw subscriptions to the facility socket, print each answer's status (JSON list),
close them all, then print the status of one more opened afterwards (retried until the gateway saw the closes)."""

from __future__ import annotations

import json
import socket
import sys
import time

REQUEST = b"GET /v1/facility/slurm-events HTTP/1.0\r\nHost: frontdesk\r\n\r\n"


def _open(path: str) -> tuple[socket.socket, int]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(path)
    s.sendall(REQUEST)
    line = s.makefile("rb").readline()
    return s, int(line.split()[1])


def main(path: str, n: int) -> int:
    opened = [_open(path) for _ in range(n)]
    statuses = [status for _, status in opened]
    for s, _ in opened:
        s.close()
    later = 0
    for _ in range(300):
        s, later = _open(path)
        s.close()
        if later == 200:
            break
        time.sleep(0.1)
    json.dump({"statuses": statuses, "later": later}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2])))
