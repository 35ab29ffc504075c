"""The agent-style exploration behind a FUSE layer with injected metadata latency: tools vs operators.

A read-only pass-through FUSE filesystem (mfusepy over libfuse 3, `pip install mfusepy`, `apt-get install
fuse3`; /dev/fuse and root needed) mirrors a generated tree and sleeps `--latency-ms` (0.5 ms: a busy
NFS server or Lustre MDS) in every metadata operation the kernel sends it (lookup/getattr, opendir,
readdir, releasedir, open, release, readlink, access, statfs), counting them itself; data reads are counted
but not delayed. The kernel's attribute and entry caches are off (`attr_timeout=0`, `entry_timeout=0`): every
lookup is a round trip, as on a filesystem whose client caches no metadata. Then the same questions, three
passes each: the real tools (one process per question, as an agent's shell runs them) and one long-lived
storage worker (the process the gateway keeps per caller), with inotify on (valid when the tree changes only
through this host) and off (`[storage] inotify = false`: listings checked by mtime, contents re-read).
Printed: metadata operations seen by the layer and wall time per question and pass, and the ratios.

First, the uncached pass side by side: the same `grep -n` question for `rg -uu -n`, `grep -rIn` and a fresh
worker (inotify on and off). The tools cache nothing (kernel caches off), so by default they run one pass
and their later passes repeat it (`--tool-passes` to run them again).

    python bench/fs_fuse.py [--files 2000] [--latency-ms 0.5] [--passes 3] [--tool-passes 1] [--first-only | --ops-only]
"""

from __future__ import annotations

import argparse
import errno
import json
import multiprocessing as mp
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fs_ops import make_tree, questions, worker_argv  # noqa: E402

from frontdesk.storage.ahead import WINDOW  # noqa: E402

META_OPS = ("getattr", "opendir", "readdir", "releasedir", "open", "release", "readlink", "access", "statfs")
SLOTS = {name: i for i, name in enumerate((*META_OPS, "read"))}


def serve(src: str, mnt: str, latency: float, counts: Any) -> None:
    """The FUSE process: a read-only pass-through that sleeps `latency` s per metadata operation."""
    import mfusepy as fuse

    lock = threading.Lock()

    def hit(op: str) -> None:
        with lock:
            counts[SLOTS[op]] += 1
        if op != "read":
            time.sleep(latency)

    class Layer(fuse.Operations):  # type: ignore[misc]
        use_ns = True

        def _p(self, path: str) -> str:
            return src + path

        def getattr(self, path: str, fh: int | None = None) -> dict[str, int]:
            hit("getattr")
            st = os.lstat(self._p(path))
            keys = ("st_mode", "st_ino", "st_nlink", "st_uid", "st_gid", "st_size", "st_blocks")
            out = {k: getattr(st, k) for k in keys}
            out.update(st_atime=st.st_atime_ns, st_mtime=st.st_mtime_ns, st_ctime=st.st_ctime_ns)
            return out

        def opendir(self, path: str) -> int:
            hit("opendir")
            return 0

        def readdir(self, path: str, fh: int) -> list[Any]:
            hit("readdir")
            with os.scandir(self._p(path)) as it:  # with d_type, as NFS READDIRPLUS and Lustre give it
                return [".", "..", *((e.name, e.stat(follow_symlinks=False).st_mode, 0) for e in it)]

        def releasedir(self, path: str, fh: int) -> int:
            hit("releasedir")
            return 0

        def readlink(self, path: str) -> str:
            hit("readlink")
            return os.readlink(self._p(path))

        def access(self, path: str, amode: int) -> int:
            hit("access")
            if not os.access(self._p(path), amode):
                raise fuse.FuseOSError(errno.EACCES)
            return 0

        def statfs(self, path: str) -> dict[str, int]:
            hit("statfs")
            sv = os.statvfs(self._p(path))
            return {k: getattr(sv, k) for k in ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_frsize", "f_namemax")}

        def open(self, path: str, flags: int) -> int:
            hit("open")
            return os.open(self._p(path), os.O_RDONLY)

        def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
            hit("read")
            return os.pread(fh, size, offset)

        def release(self, path: str, fh: int) -> int:
            hit("release")
            os.close(fh)
            return 0

    opts = {"attr_timeout": 0, "entry_timeout": 0, "negative_timeout": 0}
    fuse.FUSE(Layer(), mnt, foreground=True, ro=True, default_permissions=True, allow_other=True, **opts)


def _meta(counts: Any) -> int:
    return sum(counts[SLOTS[op]] for op in META_OPS)


def _quiet(counts: Any) -> int:
    """The layer's count once it has stopped moving: what a question cost includes the work done after its
    answer (the kernel's releases, the worker's content-cache bookkeeping)."""
    last = _meta(counts)
    while True:
        time.sleep(0.2)
        now = _meta(counts)
        if now == last:
            return now
        last = now


def _ask(proc: subprocess.Popen[bytes], argv: list[str]) -> dict[str, Any]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write((json.dumps({"op": argv[0], "argv": argv[1:], "cwd": "/", "limit": 100000}) + "\n").encode())
    proc.stdin.flush()
    answer: dict[str, Any] = json.loads(proc.stdout.readline())
    return answer


def _worker(side: str) -> subprocess.Popen[bytes]:
    extra = ["--no-inotify"] if side == "op (no inotify)" else []
    return subprocess.Popen([*worker_argv(), *extra], stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def first_pass(
    mnt: Path, counts: Any, seen: dict[tuple[str, ...], tuple[int, float]]
) -> dict[str, tuple[int, float, int]]:
    """The same `grep -n NEEDLE_LOSS` question, uncached for everyone, one after the other on the same mount:
    rg and grep -r (one process each), and a fresh worker's first question (inotify on and off).
    Per contender: (metadata ops seen by the layer, wall s, output lines). The tools' measurements also go
    into `seen` (argv → (ops, wall)): the same command in the repeated-pass block is not run again."""
    r = str(mnt)
    out: dict[str, tuple[int, float, int]] = {}
    tools = {
        "rg -uu -n": ["rg", "-uu", "-n", "NEEDLE_LOSS", r],  # rg's threads: one per core, at most 12
        f"rg -uu -n -j{WINDOW}": ["rg", "-uu", "-n", f"-j{WINDOW}", "NEEDLE_LOSS", r],  # as many as the read-ahead
        "grep -rIn": ["grep", "-rIn", "NEEDLE_LOSS", r],
    }
    for name, argv in tools.items():
        if not shutil.which(argv[0]):
            continue
        before, t0 = _meta(counts), time.perf_counter()
        lines = subprocess.run(argv, capture_output=True).stdout.count(b"\n")
        wall = time.perf_counter() - t0
        out[name] = (_quiet(counts) - before, wall, lines)
        seen[tuple(argv)] = out[name][:2]
    for side in ("op (inotify)", "op (no inotify)"):
        proc = _worker(side)
        try:
            time.sleep(0.5)  # the worker's imports are not the question's cost
            before, t0 = _meta(counts), time.perf_counter()
            answer = _ask(proc, ["grep", "-n", "NEEDLE_LOSS", r])
            wall = time.perf_counter() - t0
            out[side] = (_quiet(counts) - before, wall, len(answer.get("items", [])))
        finally:
            proc.kill()
            proc.wait()
    return out


def run_side(
    qs: list[tuple[str, list[str], list[str]]],
    counts: Any,
    passes: int,
    side: str,
    seen: dict[tuple[str, ...], tuple[int, float]] | None = None,
) -> list[list[tuple[int, float]]]:
    """Per pass, per question: (metadata ops seen by the layer, wall s). A tool command already measured in
    this run (`seen`: the first-pass block runs the same `grep -rIn` and `rg -uu -n`) is taken from there:
    with the kernel's caches off an identical command costs the same, and at 100k files each is minutes."""
    proc = None
    if side != "tools":
        proc = _worker(side)
    out = []
    try:
        for _ in range(passes):
            row = []
            for _name, tool, op in qs:
                if proc is None and seen and tuple(tool) in seen:
                    row.append(seen[tuple(tool)])
                    continue
                before, t0 = _meta(counts), time.perf_counter()
                if proc is None:
                    subprocess.run(tool, capture_output=True)
                else:
                    _ask(proc, op)
                wall = time.perf_counter() - t0
                row.append((_quiet(counts) - before, wall))
            out.append(row)
    finally:
        if proc is not None:
            proc.kill()  # it holds the mount busy otherwise
            proc.wait()
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--latency-ms", type=float, default=0.5)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--tool-passes", type=int, default=1, help="passes run for the tools (they cache nothing)")
    ap.add_argument("--first-only", action="store_true", help="only the first-pass comparison")
    ap.add_argument("--ops-only", action="store_true", help="only the operators' passes (no tool is run)")
    args = ap.parse_args()
    args.tool_passes = max(1, min(args.tool_passes, args.passes))
    if not os.path.exists("/dev/fuse") or not shutil.which("fusermount3"):
        print("no FUSE here: run as root with /dev/fuse, `apt-get install fuse3` (libfuse 3, fusermount3)")
        return 2
    try:
        import mfusepy  # noqa: F401
    except ImportError:
        print("the FUSE layer needs mfusepy: `pip install -e '.[bench]'` (and `apt-get install fuse3`)")
        return 2
    base = Path(tempfile.mkdtemp(prefix="fsfuse-"))
    src, mnt = base / "src", base / "mnt"
    src.mkdir()
    mnt.mkdir()
    make_tree(src, args.files)
    counts = mp.Array("q", len(SLOTS), lock=False)
    server = mp.get_context("fork").Process(target=serve, args=(str(src), str(mnt), args.latency_ms / 1000, counts))
    server.start()
    try:
        for _ in range(100):
            if os.path.ismount(mnt):
                break
            time.sleep(0.05)
        heads = [str(mnt / p.relative_to(src)) for p in sorted(src.glob("pkg*/mod*/f*.py"))[:200]]
        qs = questions(mnt, heads)
        print(f"{args.files} files behind FUSE, {args.latency_ms} ms per metadata op, load {os.getloadavg()[0]:.2f}")
        if args.ops_only:
            report_ops(qs, {s: run_side(qs, counts, args.passes, s) for s in ("op (inotify)", "op (no inotify)")})
            return 0
        t0 = time.perf_counter()
        seen: dict[tuple[str, ...], tuple[int, float]] = {}
        first = first_pass(mnt, counts, seen)
        report_first(first)
        print(f"  ({time.perf_counter() - t0:.0f} s for the first-pass block)", flush=True)
        if args.first_only:
            return 0
        tools = run_side(qs, counts, args.tool_passes, "tools", seen)
        tools += [tools[-1]] * (args.passes - args.tool_passes)  # no cache: every pass costs what the last did
        sides = {
            "tools": tools,
            **{s: run_side(qs, counts, args.passes, s) for s in ("op (inotify)", "op (no inotify)")},
        }
        report(qs, sides, args.passes, args.tool_passes)
        print(f"load average {os.getloadavg()[0]:.2f} at the end")
    finally:
        if subprocess.run(["fusermount3", "-u", str(mnt)], capture_output=True).returncode != 0:
            subprocess.run(["fusermount3", "-uz", str(mnt)], capture_output=True)  # lazily, when still busy
        server.join(10)
        if not os.path.ismount(mnt):
            shutil.rmtree(base, ignore_errors=True)
    return 0


def report_first(first: dict[str, tuple[int, float, int]]) -> None:
    base = first.get("rg -uu -n") or next(iter(first.values()))
    which = "rg" if "rg -uu -n" in first else "grep -r"
    print(f"\nfirst (uncached) pass of grep -n NEEDLE_LOSS: metadata ops and wall s, ratio = value / {which}'s")
    print(f"  {'':<18} {'ops':>9} {'ratio':>7} {'wall s':>8} {'ratio':>7} {'lines':>6}")
    for name, (ops, wall, lines) in first.items():
        print(f"  {name:<18} {ops:>9} {ops / max(1, base[0]):>6.2f}x {wall:>8.2f} {wall / base[1]:>6.2f}x {lines:>6}")


def report_ops(qs: list[tuple[str, list[str], list[str]]], sides: dict[str, list[list[tuple[int, float]]]]) -> None:
    for side, passes in sides.items():
        print(f"\n{side}: metadata ops seen by the layer and wall s, per pass")
        for i, q in enumerate(qs):
            print(f"  {q[0]:<12} " + " ".join(f"{p[i][0]:>9} {p[i][1]:>8.2f}" for p in passes))


def report(
    qs: list[tuple[str, list[str], list[str]]],
    sides: dict[str, list[list[tuple[int, float]]]],
    passes: int,
    tool_passes: int,
) -> None:
    tools = sides["tools"]
    if tool_passes < passes:
        print(f"\n(the tools were run {tool_passes} time(s); their later passes repeat the last measured)")
    for side in ("op (inotify)", "op (no inotify)"):
        print(f"\n{side}: metadata ops seen by the layer (ratio tool/op) and wall ms (ratio), per pass")
        print(
            f"  {'question':<12} "
            + " ".join(f"{'tool p' + str(p + 1):>9} {'op':>7} {'ratio':>7}" for p in range(passes))
        )
        for i, q in enumerate(qs):
            cells = []
            for p in range(passes):
                t, o = tools[p][i][0], sides[side][p][i][0]
                cells.append(f"{t:>9} {o:>7} {t / max(1, o):>6.0f}x")
            print(f"  {q[0]:<12} " + " ".join(cells))
        for i, q in enumerate(qs):
            cells = []
            for p in range(passes):
                t, o = tools[p][i][1], sides[side][p][i][1]
                cells.append(f"{1000 * t:>9.0f} {1000 * o:>7.0f} {t / o:>6.1f}x")
            print(f"  {q[0] + ' ms':<12} " + " ".join(cells))


if __name__ == "__main__":
    sys.exit(main())
