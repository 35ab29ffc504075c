"""The tick examines a big array's new tasks at most `TAKE_NEW` at a time (each pass a short step on the event
loop), and every one of them is examined exactly once, in id order, over the passes that follow."""

from __future__ import annotations

import json
from pathlib import Path

from frontdesk.core.deps import TAKE_NEW, Waiting
from frontdesk.store.db import open_db
from frontdesk.store.jobs import JobStore


def test_new_jobs_are_taken_in_bounded_passes_each_once(tmp_path: Path) -> None:
    store = JobStore(open_db(tmp_path / "fd.db"))
    spec = json.dumps({"command": ["true"], "depends_on": [10**9]})
    with store.transaction():
        ids = [
            store.insert_job(spec=spec, state="PENDING", backend="local", principal="t", submitted_at=1.0)
            for _ in range(2 * TAKE_NEW + 7)
        ]
    waiting = Waiting()
    waiting.take(store, 2.0)  # a fresh Waiting's first pass reads every waiting job (the start's safety net)
    waiting.examine(ids)
    passes = []
    while waiting.pending(2.0):
        passes.append([r.id for r in waiting.take(store, 2.0)])
    assert [len(p) for p in passes] == [TAKE_NEW, TAKE_NEW, 7]
    assert [i for p in passes for i in p] == sorted(ids)
