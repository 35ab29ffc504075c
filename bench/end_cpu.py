#!/usr/bin/env python3
"""Gateway CPU per job end, this tree beside an older one, interleaved (issue 21's wake path).

    .venv/bin/python bench/end_cpu.py --baseline SRC [--jobs 180] [--plugins default|none]

Runs the wake bench's job (`bench/hotpath.py`: it prints the time and exits) on one gateway per tree, in six
alternating rounds, and prints per tree: the wake p50/p99, the gateway's CPU per job (/proc, submit to answer),
and the thread CPU of the end itself, from `core/ending.end` entered to its waiters told and to its return.
The CPU figures are what a loaded shared machine inflates least. The end is timed by a trace-only
`sitecustomize` written to a temporary directory and put on the gateways' PYTHONPATH (nothing is kept).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from hotpath import WAKE_JOB, Gateway, pct  # noqa: E402  (bench/hotpath.py)

TRACE = """
import os, sys, time, functools, importlib, builtins
_out = os.environ.get("FD_END_TRACE")
if _out and "serve" in getattr(sys, "orig_argv", sys.argv):
    _f = open(_out, "a", buffering=1)
    def _stamp(name):
        _f.write(f"{name} {time.thread_time():.6f}\\n")
    def _wrap(mod, path, label, is_async):
        obj = mod
        for p in path.split(".")[:-1]:
            obj = getattr(obj, p)
        fn = getattr(obj, path.split(".")[-1])
        if is_async:
            async def w(*a, **k):
                _stamp(label + ">")
                try:
                    return await fn(*a, **k)
                finally:
                    _stamp(label + "<")
        else:
            def w(*a, **k):
                _stamp(label + ">")
                return fn(*a, **k)
        setattr(obj, path.split(".")[-1], functools.wraps(fn)(w))
    _hooks = [
        ("frontdesk.core.ending", "end", "end", True),
        ("frontdesk.events.waiters", "Waiters.ended", "told", False),
    ]
    _orig = builtins.__import__
    def _hook(name, *args, **kw):
        mod = _orig(name, *args, **kw)
        for item in list(_hooks):
            if item[0] in sys.modules:
                try:
                    _wrap(sys.modules[item[0]], *item[1:])
                    _hooks.remove(item)
                except AttributeError:  # still being imported
                    pass
        return mod
    builtins.__import__ = _hook
"""


def one(g: Gateway, session: str | None = None) -> float:
    """Seconds from the job's print to its waiting client holding the report."""
    spec = {"command": WAKE_JOB, **({"session": session} if session else {})}
    job = g.client.submit(spec=spec, context={"cwd": "/tmp", "env": {"PATH": "/usr/bin:/bin"}})
    rep = g.client.wait([job["id"]], "all", 60)["reports"][0]
    got = time.time()
    if not rep["stdout_tail"]:  # the job did not print: not a wake to time (said, never hidden)
        print(f"   job {job['id']} ended {rep['state']} without its output: {str(rep.get('text'))[:200]!r}")
        return float("nan")
    return got - float(rep["stdout_tail"][-1])


def end_cpu(trace: Path) -> tuple[list[float], list[float]]:
    """(end entered -> waiters told, the whole end) in µs, per measured end."""
    told, whole, start = [], [], None
    measuring = False
    for line in trace.read_text().splitlines():
        name, _, value = line.partition(" ")
        if name == "MEASURE":
            measuring = True
        elif measuring and name == "end>":
            start, seen = float(value), False
        elif measuring and name == "told>" and start is not None and not seen:
            told.append((float(value) - start) * 1e6)
            seen = True
        elif measuring and name == "end<" and start is not None:
            whole.append((float(value) - start) * 1e6)
            start = None
    return told, whole


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--baseline", type=Path, required=True, help="another tree's src/ measured beside this one")
    ap.add_argument("--jobs", type=int, default=180, help="measured ends per tree (six rounds)")
    ap.add_argument("--plugins", choices=("default", "none"), default="default")
    ap.add_argument("--session", help="the jobs' agent session (the agents plug-in records and delivers each end)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="fd-endcpu-"))
    (tmp / "sitecustomize.py").write_text(TRACE)
    trees = {"this tree": ROOT / "src", "baseline": args.baseline}
    gws, traces = {}, {}
    for i, (tree, src) in enumerate(trees.items()):
        traces[tree] = tmp / f"trace-{i}.log"
        os.environ["FD_END_TRACE"] = str(traces[tree])
        gws[tree] = Gateway(Path(f"{src}:{tmp}"), plugins=None if args.plugins == "default" else "none")
    lat: dict[str, list[float]] = {t: [] for t in trees}
    cpu = dict.fromkeys(trees, 0.0)
    try:
        for tree, g in gws.items():
            for _ in range(5):  # warm: the first ends load the catalog and the plug-ins' code
                one(g, args.session)
            with traces[tree].open("a") as f:
                f.write("MEASURE\n")
        load0 = os.getloadavg()[0]
        for _ in range(6):
            for tree, g in gws.items():
                c0 = g.cpu()
                lat[tree] += [one(g, args.session) for _ in range(args.jobs // 6)]
                cpu[tree] += g.cpu() - c0
        load1 = os.getloadavg()[0]
    finally:
        for g in gws.values():
            g.stop()
    print(
        f"{time.strftime('%H:%M', time.gmtime())} UTC, {os.cpu_count()} CPUs, load average {load0:.1f} -> {load1:.1f};"
        f" plug-ins {args.plugins}; {args.jobs // 6 * 6} ends per tree, interleaved"
        + (f"; session {args.session!r}" if args.session else "")
    )
    for tree in trees:
        told, whole = end_cpu(traces[tree])
        v = [x for x in lat[tree] if x == x]  # NaN: a job that printed nothing (listed above)
        print(
            f"   {tree:<10} end -> waiters told: CPU p50 {statistics.median(told):5.0f} us, mean"
            f" {statistics.mean(told):5.0f} | whole end p50 {statistics.median(whole):5.0f} us"
            f" | gateway CPU/job {cpu[tree] / len(v) * 1e6:6.0f} us"
            f" | wake p50 {pct(v, 50) * 1000:5.1f} ms, p99 {pct(v, 99) * 1000:5.1f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
