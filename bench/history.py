#!/usr/bin/env python3
"""Give a fresh state directory the history of a long run: N ended jobs with reports and their events.

    python bench/history.py HOME N        (run with PYTHONPATH=<a tree's src> to use that tree's schema)

Used by bench/soak.py --history and bench/hotpath.py --history: a short run then pays what a 30-minute run
pays by its end (a query that scans the jobs or events table grows with the run; an indexed one does not).
Rows are shaped like the soak's: a small spec, a ~2 KB report, three events per job.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

REPORT = {
    "state": "COMPLETED",
    "exit_code": 0,
    "text": "job ended COMPLETED after 0.3 s\n" + "output line\n" * 100,
    "stdout_tail": [f"line {i}" for i in range(20)],
    "attempts": 1,
}


def fill(home: Path, n: int) -> None:
    """Insert n ended jobs (and their events) into HOME's database, creating it with this tree's schema."""
    from frontdesk.events.models import Event, EventKind
    from frontdesk.store.db import open_db
    from frontdesk.store.jobs import JobStore

    store = JobStore(open_db(home / "frontdesk.db"))
    now = time.time() - 3600
    spec = json.dumps({"command": ["/bin/sh", "-c", "echo $FRONTDESK_JOB_ID >> runs; sleep 0.3"], "depends_on": []})
    for start in range(0, n, 1000):
        with store.transaction():
            for i in range(start, min(n, start + 1000)):
                job_id = store.insert_job(
                    spec=spec,
                    state="COMPLETED",
                    reason="exit 0",
                    backend="local",
                    backend_id=f"{i + 1}.1",
                    principal="root",
                    submitted_at=now,
                    ended_at=now + 0.3,
                    report=json.dumps({**REPORT, "job_id": i + 1}),
                )
                for kind, data in (
                    (EventKind.JOB_SUBMITTED, {"name": None, "spec": json.loads(spec)}),
                    (EventKind.JOB_STATE, {"state": "COMPLETED", "previous": "RUNNING", "exit_code": 0}),
                    (EventKind.JOB_REPORT, {"report": REPORT}),
                ):
                    store.append_event(Event(kind, data=data, job_id=job_id, principal="root", ts=now))
    store.conn.close()


def fill_with(src: Path, home: Path, n: int) -> None:
    """`fill` in a child process using another tree's src/ (so its schema is that tree's)."""
    if n <= 0:
        return
    home.mkdir(parents=True, exist_ok=True)
    env = {"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, __file__, str(home), str(n)], env=env, check=True, timeout=600)


if __name__ == "__main__":
    fill(Path(sys.argv[1]), int(sys.argv[2]))
