"""What the Slurm record sweep costs with 100,000 stale records (backends/slurm/sweep.py): entries read, files
removed and time per pass, next to one full listing of the folder (what an unbounded sweep would read at once).

    .venv/bin/python bench/record_sweep.py [--files 100000]

Real files in a temporary folder and a real SQLite store with the gateway's schema (no Slurm needed). The counts
are the result; the times are printed side by side with the load average, for orientation only.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from functools import partial
from pathlib import Path

from frontdesk.backends.slurm import sweep
from frontdesk.store.db import open_db
from frontdesk.store.jobs import JobStore
from frontdesk.store.settled import connect, ended_ids, settled_keys


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        db = home / "frontdesk.db"
        store = JobStore(open_db(db))
        live = store.insert_job(
            spec="{}", state="PENDING", backend="slurm", principal="u", submitted_at=time.time(), submitting=1
        )
        folder = home / "slurm-ids" / "submitted"
        folder.mkdir(parents=True)
        old = time.time() - 3600
        for i in range(args.files):
            path = folder / f"fd-{10**6 + i}.1"
            path.touch()
            os.utime(path, (old, old))
        (folder / f"fd-{live}.1").write_text("844\n")
        os.utime(folder / f"fd-{live}.1", (old, old))
        t0 = time.perf_counter()
        listed = len(os.listdir(folder))
        list_ms = (time.perf_counter() - t0) * 1000
        print(f"load {open('/proc/loadavg').read().split()[:3]}; {listed} files; one full listing {list_ms:.1f} ms")
        passes, removed = 0, 0
        while len(os.listdir(folder)) > 1:
            conn = connect(db)
            t0 = time.perf_counter()
            settled, ended = partial(settled_keys, conn), partial(ended_ids, conn, "slurm")
            swept = sweep.sweep(home, settled, ended)
            ms = (time.perf_counter() - t0) * 1000
            conn.close()
            passes += 1
            removed += swept.removed
            if passes <= 3 or len(os.listdir(folder)) <= 1:
                print(f"pass {passes}: read {swept.examined} entries, removed {swept.removed}, {ms:.1f} ms")
        print(f"{passes} passes removed {removed}; the live record kept: {(folder / f'fd-{live}.1').exists()}")
        print(f"load {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
