"""What the failure memory adds to a submission and to a job's end, with many lessons stored.

Fills a fresh database with N lessons (N users x templates, a mix of failure kinds, some learned fixes),
then times, side by side in one run: the admission lookup (`matching`), the end-of-job work
(`record_run` + `record_failure` / `learn_from_success`), a full-text search, and as a floor a bare
primary-key SELECT on the same connection.

    .venv/bin/python bench/memory_store.py [--lessons 20000] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from frontdesk.memory.classify import classify
from frontdesk.memory.context import context_of
from frontdesk.memory.scopes import Membership
from frontdesk.memory.store import LessonStore
from frontdesk.store.db import open_db

LOGS = [
    ("slurmstepd: error: Detected 1 oom-kill event(s) in StepId=1.batch", "OUT_OF_MEMORY"),
    ("slurmstepd: error: *** JOB 1 ON cn1 CANCELLED AT 2026-12-01T00:00:00 DUE TO TIME LIMIT ***", "TIMEOUT"),
    ("ModuleNotFoundError: No module named 'torch'", "FAILED"),
    ("ImportError: libcudart.so.12: cannot open shared object file: No such file or directory", "FAILED"),
    ("OSError: [Errno 122] Disk quota exceeded", "FAILED"),
]


def _ctx(user: int, template: int, mem_g: int) -> object:
    return context_of(
        {
            "command": ["python", f"/home/u{user}/exp{template}.py", "--seed", "1"],
            "resources": {"memory": mem_g * 1024**3},
        }
    )


def _timed(fn: object, n: int) -> list[float]:
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        fn(i)  # type: ignore[operator]
        out.append((time.perf_counter() - t0) * 1000)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lessons", type=int, default=20000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    users = max(args.lessons // 50, 1)
    labs = {f"lab{i}": [f"u{u}" for u in range(i, users, 10)] for i in range(10)}
    conn = open_db(Path(tempfile.mkdtemp(prefix="fd-bench-")) / "frontdesk.db")
    store = LessonStore(conn, Membership.from_section({"labs": labs, "unix_groups": False}))
    sigs = [classify(text, state) for text, state in LOGS]
    t0 = time.perf_counter()
    conn.execute("BEGIN")
    job = 0
    for u in range(users):
        for t in range(50):
            job += 1
            sig = sigs[(u + t) % len(sigs)]
            c = _ctx(u, t, 4)
            store.record_run(job, f"u{u}", c, sig.state or "FAILED", sig, {})
            store.record_failure(job, f"u{u}", c, sig)
            if t % 5 == 0:
                job += 1
                store.learn_from_success(job, f"u{u}", _ctx(u, t, 16))
    conn.execute("COMMIT")
    fill_s = time.perf_counter() - t0
    lessons = conn.execute("SELECT COUNT(*) FROM memory_lessons").fetchone()[0]
    n = 300
    admit = _timed(lambda i: store.matching(f"u{i % users}", _ctx(i % users, i % 50, 4)), n)
    counter = [10**7]

    def end(i: int) -> None:
        counter[0] += 1
        c = _ctx(i % users, i % 50, 4 if i % 2 else 32)
        if i % 2:
            store.record_run(counter[0], f"u{i % users}", c, "OUT_OF_MEMORY", sigs[0], {})
            store.record_failure(counter[0], f"u{i % users}", c, sigs[0])
        else:
            store.record_run(counter[0], f"u{i % users}", c, "COMPLETED", None, {})
            store.learn_from_success(counter[0], f"u{i % users}", c)

    ended = _timed(end, n)
    search = _timed(lambda i: store.search("libcudart", f"u{i % users}"), n)
    floor = _timed(lambda i: conn.execute("SELECT * FROM memory_lessons WHERE id=?", (i + 1,)).fetchone(), n)
    med = {k: statistics.median(v) for k, v in {"admit": admit, "end": ended, "search": search, "floor": floor}.items()}
    result = {
        "lessons": lessons,
        "users": users,
        "fill_s": round(fill_s, 2),
        **{f"{k}_median_ms": round(v, 3) for k, v in med.items()},
        "admit_p99_ms": round(sorted(admit)[int(n * 0.99)], 3),
        "end_p99_ms": round(sorted(ended)[int(n * 0.99)], 3),
        "admit_over_floor": round(med["admit"] / med["floor"], 1),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{lessons} lessons for {users} users (filled in {fill_s:.1f}s)")
        print(
            f"admission lookup: median {result['admit_median_ms']} ms, p99 {result['admit_p99_ms']} ms "
            f"(x{result['admit_over_floor']} a primary-key SELECT at {result['floor_median_ms']} ms)"
        )
        print(f"end of job (record + learn): median {result['end_median_ms']} ms, p99 {result['end_p99_ms']} ms")
        print(f"full-text search: median {result['search_median_ms']} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
