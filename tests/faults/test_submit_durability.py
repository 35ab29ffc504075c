"""A submission the gateway answered is durable: kill -9 in the middle of a stream of submissions loses none.

Clients submit as fast as they can (single jobs from several threads, and batches) while the gateway is
killed with SIGKILL; after a restart every job whose id an answer carried is there, with its journal entry,
and no job exists twice.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from frontdesk.client import Client
from frontdesk.errors import FrontdeskError


def _submitter(socket: str, tag: str, gate: int, answered: dict[int, str], stop: threading.Event, batch: bool) -> None:
    """Submit jobs held behind `gate` (acceptance alone) until told to stop or the gateway is gone."""
    client = Client(socket_path=socket, timeout=10, autostart=False)
    n = 0
    while not stop.is_set():
        names = [f"{tag}-{n + i}" for i in range(20 if batch else 1)]
        n += len(names)
        try:
            if batch:
                body = {"jobs": [{"spec": {"command": ["true"], "name": nm, "depends_on": [gate]}} for nm in names]}
                jobs = client.request("POST", "/v1/jobs/batch", {**body, "context": {"cwd": "/tmp"}})["jobs"]
            else:
                spec = {"command": ["true"], "name": names[0], "depends_on": [gate]}
                jobs = [client.submit(spec=spec, context={"cwd": "/tmp"})]
        except FrontdeskError:
            return  # the gateway is gone: what was answered before is what must survive
        for job in jobs:
            answered[int(job["id"])] = str(job["name"])


def test_every_answered_submission_survives_a_kill9(gateway: Any) -> None:
    gate = gateway.client.submit(spec={"command": ["sleep", "600"]}, context={"cwd": "/tmp"})["id"]
    answered: dict[int, str] = {}
    stop = threading.Event()
    threads = [
        threading.Thread(target=_submitter, args=(str(gateway.socket), f"t{i}", gate, answered, stop, i == 0))
        for i in range(4)
    ]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while len(answered) < 150 and time.monotonic() < deadline:
        time.sleep(0.01)
    gateway.kill9()  # mid-stream: requests are in flight
    stop.set()
    for t in threads:
        t.join(timeout=30)
    assert len(answered) >= 150
    gateway.start()
    stored = {int(j["id"]): j for j in gateway.client.jobs(limit=100000)}
    missing = sorted(set(answered) - set(stored))
    assert missing == [], f"{len(missing)} answered submissions lost, e.g. {missing[:5]}"
    assert all(stored[i]["name"] == name for i, name in answered.items())
    names = [j["name"] for j in stored.values() if j["id"] != gate]
    assert len(names) == len(set(names)), "a submission stored twice"
    journal = {e["job_id"] for e in gateway.client.events(since=0) if e["kind"] == "job.submitted"}
    assert set(answered) <= journal, "a stored job without its job.submitted event"
