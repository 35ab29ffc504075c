"""Probe 21: cancelling a large pending array ends every task and serves other callers meanwhile.

Before: each task's end counted the array's unfinished tasks (every task's row, read at every task's end), so
cancelling a 10,000-task pending array took minutes (4,167 tasks in six, health unanswered for 5 s at a time,
`frontdesk cancel` gave up after 60 s). The quadratic cost is a time and is measured by bench/array_cancel.py;
this test asserts by order: every task ends CANCELLED, the cancel's caller gets its answer, and a health request
sent once the cancel has visibly begun is answered while tasks are still unfinished (read from the database by a
second reader).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from typing import Any

TASKS = 2000


def _cancelled(db: str, array_id: int) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
        row = conn.execute("SELECT COUNT(*) FROM jobs WHERE array_id=? AND state='CANCELLED'", (array_id,)).fetchone()
    return int(row[0])


def test_cancelling_a_large_pending_array_lets_others_in(gateway_factory: Any) -> None:
    gw = gateway_factory()
    blocker = gw.client.submit(spec={"command": ["sleep", "600"]})["id"]
    array_id = gw.client.submit(spec={"command": ["true"], "array": f"0-{TASKS - 1}", "depends_on": [blocker]})["id"]
    db = str(gw.home / "frontdesk.db")
    done: dict[str, Any] = {}

    def cancel() -> None:
        done["result"] = gw.cli("cancel", str(array_id), timeout=600)

    worker = threading.Thread(target=cancel)
    worker.start()
    deadline = time.monotonic() + 300
    while _cancelled(db, array_id) == 0:  # the cancel has begun
        assert worker.is_alive() and time.monotonic() < deadline
        time.sleep(0.01)
    assert gw.client.health()["ok"]
    served_midway = _cancelled(db, array_id)
    worker.join(600)
    assert not worker.is_alive() and done["result"].returncode == 0, done["result"].stderr
    assert served_midway < TASKS, "the gateway answered no one until the whole array was cancelled"
    assert gw.client.job(array_id)["state"] == "CANCELLED"
    assert _cancelled(db, array_id) == TASKS
    gw.client.cancel(blocker)
