"""Run as a test user: HTTP calls to the gateway from stdin, answers to stdout (one process per user).

Input: a JSON list of {"method", "path", "body"?}; output: a JSON list of [status, answer] where status is
200 for a success, else the error's code ("forbidden", "not_found", "denied", ...) and answer its message.
Uses only frontdesk.client (stdlib): it runs under the system Python as an unprivileged user.
"""

from __future__ import annotations

import json
import sys

from frontdesk.client import Client
from frontdesk.errors import FrontdeskError


def main() -> int:
    calls = json.load(sys.stdin)
    client = Client(timeout=60)
    out = []
    for call in calls:
        try:
            answer = client.request(call["method"], call["path"], call.get("body"))
            out.append([200, answer])
        except FrontdeskError as exc:
            out.append([exc.code, exc.message])
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
