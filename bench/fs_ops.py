"""Storage operators vs the real tools on a generated tree, and ten agents sharing a metadata budget.

Part 1: an agent-style exploration (find by name, grep -r repeated, head of many files, wc -l of all sources)
answered by the real tools (find, grep -r, rg -uu if installed, head, wc: one process per question, as an
agent's shell runs them) and by one storage worker (the process the gateway keeps per caller). Metadata
system calls are counted the same way on both sides, by `strace -c -f` (openat, getdents64, the stat
family, close, readlink, access), and wall time is measured without strace. Printed as ratios, per pass.
Metadata cost is shown as syscall counts here; bench/fs_fuse.py runs the same questions behind a FUSE layer
that injects a per-operation latency and counts what reaches it.

Part 2: ten agents of one user, each its own session, ask through the storage plug-in's own code path
(StoragePlugin.answer: budget → worker → charge); agent 0 runs `du -s` of the whole tree in a loop (a stat
per entry each time), the nine others ask small questions. Their latency is printed with the budget off
and on, with the noisy agent's admitted/refused counts.

    python bench/fs_ops.py [--files 20000] [--passes 3] [--seconds 6]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

META = ("openat", "open", "getdents64", "newfstatat", "fstat", "lstat", "stat", "statx", "close", "readlink", "access")
WORDS = ["alpha", "beta", "gamma", "delta", "import numpy", "def main", "return x", "TODO fix", "class Model"]


def make_tree(root: Path, files: int, seed: int = 7) -> None:
    rnd = random.Random(seed)
    per_dir = 100
    for i in range(files):
        d = root / f"pkg{i // (per_dir * 20):02}" / f"mod{(i // per_dir) % 20:02}"
        if i % per_dir == 0:
            d.mkdir(parents=True, exist_ok=True)
        ext = (".py", ".txt", ".md", ".json")[i % 4]
        lines = [rnd.choice(WORDS) + f" {rnd.randint(0, 999)}" for _ in range(rnd.randint(5, 60))]
        if i % 997 == 0:
            lines.append("NEEDLE_LOSS_NAN here")
        (d / f"f{i:06}{ext}").write_text("\n".join(lines) + "\n")


def questions(root: Path, heads: list[str]) -> list[tuple[str, list[str], list[str]]]:
    """(name, real tool argv, operator argv as op + args)."""
    r = str(root)
    out = [
        ("find -name", ["find", r, "-name", "*.py"], ["find", r, "-name", "*.py"]),
        ("grep -rn", ["grep", "-rIn", "NEEDLE_LOSS", r], ["grep", "-n", "NEEDLE_LOSS", r]),
        ("grep -rl", ["grep", "-rIl", "class Model", r], ["grep", "-l", "class Model", r]),
        ("head x200", ["head", "-n", "20", *heads], ["head", "-n", "20", *heads]),
        ("wc -l *.py", ["sh", "-c", f"find {r} -name '*.py' -print0 | xargs -0 wc -l"], ["wc", "-l", "-g", "*.py", r]),
    ]
    if shutil.which("rg"):
        out.append(("rg -uu", ["rg", "-uu", "-n", "NEEDLE_LOSS", r], ["grep", "-n", "NEEDLE_LOSS", r]))
    return out


def _count(log: str, split: bool = True) -> list[int]:
    """Metadata calls in a strace log; with `split`, one count per question: from the worker's read of a
    question on fd 0 to the next one (the work done after the answer is written belongs to it)."""
    out: list[int] = []
    busy = not split
    count = 0
    for line in log.splitlines():
        name, _, args = line.partition("(")
        name = name.split()[-1] if name.split() else ""
        if split and name == "read" and args.startswith("0,") and not busy:
            busy, count = True, 0
        elif split and name == "write" and args.startswith("1,") and busy:
            out.append(count)
            busy = False
        elif busy and name in META:
            count += 1
        elif split and out and name in META:
            out[-1] += 1  # after the answer (the content cache's settle): still this question's cost
    return out if split else [count]


def tool_syscalls(qs: list[tuple[str, list[str], list[str]]], root: Path, empty: Path) -> list[int]:
    """Per question: metadata calls of the real tool on the tree minus the same tool on an empty directory."""
    out = []
    for _, argv, _ in qs:
        counts = []
        base = [a.replace(str(root), str(empty)) for a in argv] if argv[0] != "head" else [*argv[:3], "/dev/null"]
        for target in (argv, base):
            with tempfile.NamedTemporaryFile(suffix=".strace") as log:
                subprocess.run(["strace", "-f", "-qq", "-o", log.name, *target], capture_output=True)
                counts.append(_count(Path(log.name).read_text(), split=False)[0])
        out.append(max(0, counts[0] - counts[1]))
    return out


def worker_argv() -> list[str]:
    return [
        sys.executable,
        "-P",
        "-m",
        "frontdesk.storage.worker",
        "--uid",
        str(os.getuid()),
        "--gid",
        str(os.getgid()),
    ]


def _line(q: tuple[str, list[str], list[str]]) -> bytes:
    return (json.dumps({"op": q[2][0], "argv": q[2][1:], "cwd": "/", "limit": 100000}) + "\n").encode()


def operator_syscalls(qs: list[tuple[str, list[str], list[str]]], passes: int) -> list[list[int]]:
    """Per pass, per question: metadata calls of one long-lived worker (as the gateway keeps per caller)."""
    with tempfile.NamedTemporaryFile(suffix=".strace") as log:
        proc = subprocess.Popen(
            ["strace", "-qq", "-o", log.name, *worker_argv()], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        assert proc.stdin and proc.stdout
        for _ in range(passes):
            for q in qs:
                proc.stdin.write(_line(q))
                proc.stdin.flush()
                proc.stdout.readline()
        proc.stdin.close()
        proc.wait()
        counts = _count(Path(log.name).read_text())
    return [counts[p * len(qs) : (p + 1) * len(qs)] for p in range(passes)]


def wall(qs: list[tuple[str, list[str], list[str]]], passes: int) -> tuple[list[float], list[list[float]]]:
    tools = []
    for q in qs:
        t0 = time.perf_counter()
        subprocess.run(q[1], capture_output=True)
        tools.append(time.perf_counter() - t0)
    proc = subprocess.Popen(worker_argv(), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin and proc.stdout
    ops: list[list[float]] = []
    for _ in range(passes):
        row = []
        for q in qs:
            t0 = time.perf_counter()
            proc.stdin.write(_line(q))
            proc.stdin.flush()
            proc.stdout.readline()
            row.append(time.perf_counter() - t0)
        ops.append(row)
    proc.stdin.close()
    proc.wait()
    return tools, ops


class _Settings:
    def __init__(self, storage: dict[str, Any]) -> None:
        self.storage = storage

    def section(self, name: str) -> dict[str, Any]:
        return self.storage if name == "storage" else {}


async def agents(root: Path, seconds: float, budget: dict[str, Any]) -> dict[str, Any]:
    from frontdesk.identity import Caller, Via
    from frontdesk.storage.plugin import StoragePlugin

    plugin = StoragePlugin(_Settings(budget))  # type: ignore[arg-type]
    caller = Caller(user="root", uid=os.getuid(), gid=os.getgid(), via=Via.UNIX)
    subdirs = sorted(str(p) for p in root.glob("pkg*/mod*"))
    lat: list[float] = []
    noisy = {"admitted": 0, "refused": 0}
    stop = time.monotonic() + seconds

    async def ask(op: str, argv: list[str], session: str) -> int:
        body = json.dumps({"argv": argv, "cwd": "/", "session": session}).encode()
        return (await plugin.answer(caller, op, body)).status_code

    async def loud() -> None:
        while time.monotonic() < stop:
            status = await ask("du", ["-s", str(root)], "agent0")  # a stat per entry, every time
            noisy["admitted" if status == 200 else "refused"] += 1
            if status == 429:
                await asyncio.sleep(0.05)

    async def quiet(k: int) -> None:
        rnd = random.Random(k)
        while time.monotonic() < stop:
            t0 = time.perf_counter()
            await ask("head", ["-n", "5", rnd.choice(subdirs) + "/f" + "0" * 6 + ".py"], f"agent{k}")
            await ask("find", [rnd.choice(subdirs), "-maxdepth", "1", "-name", "*.md"], f"agent{k}")
            lat.append(time.perf_counter() - t0)
            await asyncio.sleep(0.1)

    await asyncio.gather(loud(), *(quiet(k) for k in range(1, 10)))
    await plugin.stop()
    lat.sort()
    return {"p50_ms": 1000 * statistics.median(lat), "p95_ms": 1000 * lat[int(0.95 * (len(lat) - 1))], **noisy}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=20000)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=6.0)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="fsbench-"))
    try:
        t0 = time.perf_counter()
        make_tree(root, args.files)
        print(f"tree: {args.files} files under {root} ({time.perf_counter() - t0:.1f} s to make)")
        heads = [str(p) for p in sorted(root.glob("pkg*/mod*/f*.py"))[:200]]
        qs = questions(root, heads)
        tools, ops = wall(qs, args.passes)
        if shutil.which("strace"):
            empty = root / "empty"
            empty.mkdir()
            tsys, osys = tool_syscalls(qs, root, empty), operator_syscalls(qs, args.passes)
        else:
            tsys, osys = [0] * len(qs), [[0] * len(qs)] * args.passes
        print(
            f"\n{'question':<12} {'tool sys':>9} "
            + " ".join(f"{'op sys p' + str(p + 1):>10} {'ratio':>7}" for p in range(args.passes))
        )
        for i, q in enumerate(qs):
            cells = " ".join(f"{osys[p][i]:>10} {tsys[i] / max(1, osys[p][i]):>6.0f}x" for p in range(args.passes))
            print(f"{q[0]:<12} {tsys[i]:>9} {cells}")
        print(
            f"\n{'question':<12} {'tool ms':>9} "
            + " ".join(f"{'op ms p' + str(p + 1):>10} {'ratio':>7}" for p in range(args.passes))
        )
        for i, q in enumerate(qs):
            cells = " ".join(f"{1000 * ops[p][i]:>10.1f} {tools[i] / ops[p][i]:>6.2f}x" for p in range(args.passes))
            print(f"{q[0]:<12} {1000 * tools[i]:>9.1f} {cells}")
        print("\nten agents of one user (agent0: du -s of the whole tree in a loop; 1-9: head + find of one directory)")
        for label, cfg in (
            ("no budget", {"rate": 1e9, "burst": 1e11}),
            ("budget", {"rate": args.files, "burst": 2 * args.files}),
        ):
            r = asyncio.run(agents(root, args.seconds, cfg))
            print(f"  {label:<10} quiet agents p50 {r['p50_ms']:.1f} ms p95 {r['p95_ms']:.1f} ms; "
                  f"noisy agent: {r['admitted']} answered, {r['refused']} refused with retry-after")  # fmt: skip
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
