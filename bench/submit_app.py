#!/usr/bin/env python3
"""The gateway's app alone: CPU per `POST /v1/jobs` with the ASGI app driven in-process (no uvicorn, no socket).

    .venv/bin/python bench/submit_app.py [--jobs 2000] [--rounds 3] [--baseline SRC]

Each round starts a fresh interpreter per tree (its own `src/` first on the path, a temporary home, no plug-ins),
submits `--jobs` jobs held by a dependency (as `bench/hotpath.py`'s single submissions: the client's whole
environment, a request id each) straight into the app and prints the process CPU per job. Without the HTTP
server and the clients on the same 2 cores, this is the least noisy figure of the submission path's own code;
`bench/hotpath.py` gives the whole path. Compare the columns of one run, not runs.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

DRIVER = r"""
import asyncio, json, os, sys, time
from frontdesk.server import _settings
from frontdesk.gateway import Gateway
from frontdesk.api.app import create_app
from frontdesk.guard.secrets import redact
from frontdesk.identity import PeerCred
from frontdesk.jobenv import capture_env

n = int(sys.argv[1])
app = create_app(Gateway(_settings(None, None, None, None, False), redact=redact))
cred, env = PeerCred(os.getpid(), os.getuid(), os.getgid()), capture_env()


async def post(body):
    raw = json.dumps(body).encode()
    head = [(b"host", b"x"), (b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())]
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": "/v1/jobs", "raw_path": b"/v1/jobs", "query_string": b"", "root_path": "", "client": None,
             "server": None, "headers": head, "state": {}, "frontdesk.peer": cred}
    sent, got = [False], []

    async def receive():
        if not sent[0]:
            sent[0] = True
            return {"type": "http.request", "body": raw, "more_body": False}
        await asyncio.sleep(3600)

    async def send(message):
        got.append(message)

    await app(scope, receive, send)
    assert got[0]["status"] == 200, got
    return json.loads(got[1]["body"])


def context():
    return {"cwd": "/tmp", "env": env, "request_id": os.urandom(12).hex()}


async def main():
    async with app.router.lifespan_context(app):
        gate = (await post({"spec": {"command": ["sleep", "3600"]}, "context": context()}))["id"]
        spec = {"command": ["true"], "resources": {"memory": "16M"}, "depends_on": [gate]}
        for _ in range(200):  # warm: caches, the statement cache, the first WAL pages
            await post({"spec": spec, "context": context()})
        t0 = time.process_time()
        for _ in range(n):
            await post({"spec": spec, "context": context()})
        print(f"{(time.process_time() - t0) / n * 1000:.3f}")
        await app.state.gw.cancel(gate)


asyncio.run(main())
"""


def one(src: Path, jobs: int) -> float:
    """App CPU ms per submission, measured in a fresh interpreter running `src`."""
    with tempfile.TemporaryDirectory(prefix="fd-app-", dir="/tmp") as home:
        env = {k: v for k, v in os.environ.items() if not k.startswith("FRONTDESK_")}
        env.update(FRONTDESK_HOME=home, FRONTDESK_NO_AUTOSTART="1", FRONTDESK_PLUGINS="none", PYTHONPATH=str(src))
        out = subprocess.run([sys.executable, "-c", DRIVER, str(jobs)], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{src}: {out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode}")
    return float(out.stdout.split()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--jobs", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--baseline", type=Path, help="another tree's src/ measured beside this one")
    args = ap.parse_args()
    trees = {"this tree": ROOT / "src", **({"baseline": args.baseline} if args.baseline else {})}
    print(f"app CPU per POST /v1/jobs, in-process ({args.jobs} jobs a round); load {os.getloadavg()[0]:.1f}")
    for n in range(args.rounds):
        for tree, src in trees.items():
            print(f"   {n + 1} {tree:<10} {one(src, args.jobs):.3f} ms CPU/job", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
