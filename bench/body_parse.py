#!/usr/bin/env python3
"""What a JSON request body's way in costs on the gateway's hot path, this tree against another, side by side.

    .venv/bin/python bench/body_parse.py [--baseline SRC] [--rounds 5] [--n 3000]

Drives each tree's own ASGI layers in-process (no socket, no gateway, the route's own work a stub), so what is
measured is the body's way in: read, the duplicate-key check, the parse, validation. Two cases: a submission as
the client sends it (its environment included) to the fast submit route, and a batch of 100 (bench/hotpath.py's)
to a FastAPI route taking `BatchBody`. A tree with the `UniqueKeys` middleware (before the body was parsed once)
runs it in front, as its app did. Each tree runs in a process of its own, rounds interleaved; prints CPU µs per
request (process time: less sensitive than wall time to a loaded machine) and old/new, with the load average.
"""

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _bodies() -> dict[str, tuple[str, bytes]]:
    from frontdesk.jobenv import capture_env

    env = capture_env()
    spec = {"command": ["true"], "resources": {"memory": "16M"}, "depends_on": [1]}
    single = {"context": {"cwd": "/tmp", "env": env, "request_id": os.urandom(12).hex()}, "spec": spec}
    batch = {"jobs": [{"spec": spec}] * 100, "context": {"cwd": "/tmp", "env": env}}
    return {
        "submit": ("/v1/jobs", json.dumps(single).encode()),
        "batch": ("/v1/jobs/batch", json.dumps(batch).encode()),
    }


def _apps() -> dict[str, Any]:
    """The fast submit layer and a FastAPI body route, as this tree builds them (the work behind: a stub)."""
    from fastapi import APIRouter, FastAPI
    from starlette.responses import Response

    from frontdesk.api import uniquekeys
    from frontdesk.api.fastsubmit import FastRoute
    from frontdesk.api.jobs import BatchBody, SubmitBody

    class Fast(FastRoute[SubmitBody]):
        path, body = "/v1/jobs", SubmitBody

        async def answer(self, caller: Any, parsed: SubmitBody) -> Response:
            return Response(b"{}", media_type="application/json")

    async def missing(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("the fast route passed a well-formed body on")

    router = APIRouter()

    @router.post("/v1/jobs/batch")
    async def batch(body: BatchBody) -> dict[str, Any]:
        return {"jobs": len(body.jobs)}

    full = FastAPI()
    fast: Any = Fast(missing, None, None, None)  # type: ignore[arg-type]
    if hasattr(uniquekeys, "UniqueKeys"):  # the middleware in front of every route, as that tree's app had it
        full.include_router(router)
        full.add_middleware(uniquekeys.UniqueKeys)
        fast = uniquekeys.UniqueKeys(fast)
    else:
        full.include_router(uniquekeys.checked(router))
    return {"submit": fast, "batch": full}


async def _drive(app: Any, path: str, body: bytes, n: int) -> float:
    """CPU seconds per request over n requests."""
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    sent: list[Any] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    start = time.process_time()
    for _ in range(n):
        scope = {"type": "http", "method": "POST", "path": path, "raw_path": path.encode(), "query_string": b"",
                 "headers": headers, "state": {"caller": None}, "scheme": "http", "server": ("x", 80),
                 "client": ("y", 1), "root_path": "", "http_version": "1.1", "asgi": {"version": "3.0"}}  # fmt: skip
        await app(scope, receive, send)
    spent = time.process_time() - start
    status = [m["status"] for m in sent if m["type"] == "http.response.start"]
    last = sent[-1].get("body", b"")[:300]
    assert set(status) == {200}, f"{path}: answered {sorted(set(status))}: {last!r}"
    return spent / n


def worker(src: str, n: int) -> int:
    sys.path.insert(0, src)
    apps, bodies = _apps(), _bodies()
    out = {}
    for case, (path, body) in bodies.items():
        asyncio.run(_drive(apps[case], path, body, max(1, n // 10)))  # warm
        out[case] = asyncio.run(_drive(apps[case], path, body, n if case == "submit" else max(1, n // 10)))
    print(json.dumps(out))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--baseline", type=Path, help="another tree's src/ measured beside this one")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--n", type=int, default=3000, help="requests per round (a tenth of that for the batch)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args.worker, args.n)
    trees = {"this tree": ROOT / "src", **({"baseline": args.baseline} if args.baseline else {})}
    got: dict[str, dict[str, list[float]]] = {t: {"submit": [], "batch": []} for t in trees}
    print(f"machine: {os.cpu_count()} CPUs; load average {open('/proc/loadavg').read().split()[0]} at start")
    for r in range(args.rounds):
        for tree, src in trees.items():
            argv = [sys.executable, __file__, "--worker", str(src), "--n", str(args.n)]
            res = json.loads(subprocess.run(argv, capture_output=True, text=True, check=True, cwd=src.parent).stdout)
            for case, value in res.items():
                got[tree][case].append(value)
            load = open("/proc/loadavg").read().split()[0]
            us = f"submit {res['submit'] * 1e6:7.1f} us  batch {res['batch'] * 1e6:8.1f} us"
            print(f"   {r + 1} {tree:<10} {us}  (load {load})", flush=True)
    for case, label in (("submit", "fast submit route, one client body"), ("batch", "FastAPI route, 100-job batch")):
        best = {t: min(v[case]) * 1e6 for t, v in got.items()}
        line = "   ".join(f"{t} {v:8.1f} us" for t, v in best.items())
        ratio = f"   baseline/this {best['baseline'] / best['this tree']:.2f}" if "baseline" in best else ""
        print(f"{label:<36} (best of {args.rounds}, CPU per request)  {line}{ratio}")
    print(f"load average {open('/proc/loadavg').read().split()[0]} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
