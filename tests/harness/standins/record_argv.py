#!/usr/bin/env python3
"""A stand-in for `claude` / `codex` on PATH: records argv, cwd and FRONTDESK_SESSION, prints JSON.

Writes one JSON line per call to $STANDIN_RECORD (the real binaries need the network). Exits with
$STANDIN_EXIT (default 0) so tests can make a delivery fail.
"""

import json
import os
import sys

record = os.environ.get("STANDIN_RECORD")
if record:
    with open(record, "a", encoding="utf-8") as fh:
        fh.write(
            json.dumps(
                {
                    "argv0": os.path.basename(sys.argv[0]),
                    "args": sys.argv[1:],
                    "cwd": os.getcwd(),
                    "session_env": os.environ.get("FRONTDESK_SESSION"),
                }
            )
            + "\n"
        )
print(json.dumps({"type": "result", "subtype": "success", "result": "ok", "is_error": False}))
sys.exit(int(os.environ.get("STANDIN_EXIT", "0")))
