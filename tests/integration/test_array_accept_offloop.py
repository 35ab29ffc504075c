"""A big array is accepted while the gateway keeps answering others (issue 21: one 10,000-task transaction ran
on the event loop, so health, status and every long-poll waited ~2-3 s), and it is stored whole or not at all.

How "while" is known without a clock: the array's inserts are under way once the database's WAL has grown by
megabytes past its size before the submission (nothing else writes meanwhile); a read answered then that does
not yet list the array was answered mid-accept (the loop free), and it saw none of the array (one transaction).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

TASKS = 10_000
GROWN = 2 << 20
"""WAL bytes past its size before the submission: 10,000 task rows write tens of MB, the gate job's ticks KBs."""


def _wal(home: Path) -> int:
    path = home / "frontdesk.db-wal"
    return path.stat().st_size if path.exists() else 0


def test_others_are_answered_while_a_10000_task_array_is_accepted(gateway: Any) -> None:
    gate = gateway.client.submit(spec={"command": ["sleep", "600"]})["id"]
    spec = {"name": "big-offloop", "array": f"0-{TASKS - 1}", "command": ["true"], "depends_on": [gate]}
    replies: list[dict[str, Any]] = []
    done = threading.Event()

    def accept() -> None:
        replies.append(gateway.client.submit(spec=spec))
        done.set()

    before = _wal(gateway.home)
    thread = threading.Thread(target=accept)
    thread.start()
    answered_mid_accept = []
    while not done.is_set():
        if _wal(gateway.home) - before < GROWN:
            continue  # the accept's inserts have not reached the WAL yet
        seen = gateway.client.jobs(limit=50)
        health = gateway.client.health()
        if not done.is_set() and all(j.get("name") != "big-offloop" for j in seen):
            answered_mid_accept.append((len(seen), health))
    thread.join()
    assert answered_mid_accept, "no read was answered while the array's inserts were under way"
    assert all(n == 1 for n, _ in answered_mid_accept)  # only the gate: none of the array was visible
    parent = gateway.client.job(replies[0]["id"])
    assert parent["array"]["size"] == TASKS
    assert sum(parent["array"]["counts"].values()) == TASKS  # complete afterwards
    gateway.client.cancel(gate)
