"""The first, uncached pass of `fs grep` and `fs find` beside ripgrep, grep -r and find, interleaved in one run.

Every round runs each contender once, in a shuffled order, on the same tree (page cache warm for all: the
tree was just written and is read by everyone each round): `rg -uu -n`, `grep -rIn` (one process each, as
an agent's shell runs them) and the operator with a fresh `Fs` (an uncached question to a long-lived worker:
no listing, no watch, no kept contents), with inotify watching on (the gateway's default: the first pass
also sets the watches and keeps contents) and off. Printed: median wall ms and median CPU ms (user + sys,
less sensitive to the other work on a shared machine), and the ratio to rg, for a literal and a regex.

    python bench/fs_first_pass.py [--files 20000] [--rounds 9] [--tree DIR]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fs_ops import make_tree  # noqa: E402

from frontdesk.storage.fs import Fs  # noqa: E402
from frontdesk.storage.model import Op  # noqa: E402
from frontdesk.storage.ops import FsRequest, run  # noqa: E402
from frontdesk.storage.watch import Watcher  # noqa: E402

PATTERNS = (("literal", "NEEDLE_LOSS"), ("regex", r"NEE.LE_L[O]SS|cla+ss Mo?del 99"))


def _cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _operator(op: Op, argv: tuple[str, ...], watch: bool) -> Callable[[], int]:
    def go() -> int:
        watcher = Watcher() if watch else None
        try:
            return len(run(FsRequest(op, argv, "/", 100000), Fs(watcher=watcher)).items)
        finally:
            if watcher is not None:
                watcher.close()

    return go


def _tool(argv: list[str]) -> Callable[[], int]:
    return lambda: subprocess.run(argv, capture_output=True).stdout.count(b"\n")


def grep_contenders(root: str, pattern: str) -> dict[str, Callable[[], int]]:
    out = {
        "grep -rIn": _tool(["grep", "-rInE", pattern, root]),
        "fs grep (watch)": _operator(Op.GREP, ("-n", pattern, root), True),
        "fs grep (no watch)": _operator(Op.GREP, ("-n", pattern, root), False),
    }
    if shutil.which("rg"):
        out["rg -uu -n"] = _tool(["rg", "-uu", "-n", pattern, root])
    return out


def find_contenders(root: str) -> dict[str, Callable[[], int]]:
    return {
        "find -name": _tool(["find", root, "-name", "*.py"]),
        "fs find (watch)": _operator(Op.FIND, (root, "-name", "*.py"), True),
        "fs find (no watch)": _operator(Op.FIND, (root, "-name", "*.py"), False),
    }


def measure(cands: dict[str, Callable[[], int]], rounds: int) -> dict[str, tuple[float, float, int]]:
    wall: dict[str, list[float]] = {k: [] for k in cands}
    cpu: dict[str, list[float]] = {k: [] for k in cands}
    lines: dict[str, int] = {}
    order = list(cands)
    for _ in range(rounds):
        random.shuffle(order)
        for name in order:
            c0, t0 = _cpu(), time.perf_counter()
            lines[name] = cands[name]()
            wall[name].append(time.perf_counter() - t0)
            cpu[name].append(_cpu() - c0)
    return {k: (1000 * statistics.median(wall[k]), 1000 * statistics.median(cpu[k]), lines[k]) for k in cands}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--tree", default=None, help="an existing tree (not deleted)")
    args = ap.parse_args()
    root = Path(args.tree) if args.tree else Path(tempfile.mkdtemp(prefix="fsfirst-"))
    try:
        if not args.tree:
            make_tree(root, args.files)
        print(f"tree {root}, load average {os.getloadavg()[0]:.2f} at start, {os.cpu_count()} CPUs")
        cases = [(f"grep, {label}: {pattern!r}", grep_contenders(str(root), pattern)) for label, pattern in PATTERNS]
        cases.append(("find -name '*.py'", find_contenders(str(root))))
        for title, cands in cases:
            res = measure(cands, args.rounds)
            base = next(iter(res.values())) if "rg -uu -n" not in res else res["rg -uu -n"]
            print(
                f"\n{title}   (median of {args.rounds}; ratio = time / {'rg' if 'rg -uu -n' in res else 'the tool'}'s)"
            )
            print(f"  {'':<20} {'wall ms':>8} {'ratio':>6} {'cpu ms':>8} {'ratio':>6} {'lines':>6}")
            for name, (w, c, n) in res.items():
                print(f"  {name:<20} {w:>8.1f} {w / base[0]:>5.2f}x {c:>8.1f} {c / base[1]:>5.2f}x {n:>6}")
        print(f"\nload average {os.getloadavg()[0]:.2f} at the end")
    finally:
        if not args.tree:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
