"""Run as a test user: hold N idle connections to the gateway socket (each a parked `events?follow` stream),
print how many were refused with 429 (JSON), wait for a line on stdin, then close them all."""

from __future__ import annotations

import json
import resource
import socket
import sys

REQUEST = b"GET /v1/events?follow=true&since=0 HTTP/1.1\r\nHost: frontdesk\r\n\r\n"


def main(path: str, n: int) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, n + 64)), hard))
    held, refused = [], 0
    for _ in range(n):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        s.sendall(REQUEST)
        held.append(s)
    for s in held:  # a refused connection has its 429 waiting and is closed; a held one says nothing yet
        s.settimeout(0.2)
        try:
            head = s.recv(64)
        except TimeoutError:
            continue
        refused += head.startswith(b"HTTP/1.1 429")
    print(json.dumps({"held": n - refused, "refused": refused}), flush=True)
    sys.stdin.readline()
    for s in held:
        s.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2])))
