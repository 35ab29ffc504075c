"""A gateway SIGKILLed while an array's rows are inserted (`array_uncommitted`: the parent, every task and the
events written in the worker thread's transaction, not committed): after a restart none of it is there, and the
same array submitted again is stored whole."""

from __future__ import annotations

from typing import Any

import pytest
from fault_helpers import until

from frontdesk.errors import FrontdeskError


def test_killed_before_the_arrays_commit_nothing_is_stored(gateway_factory: Any) -> None:
    gw = gateway_factory(env={"FRONTDESK_FAULT": "array_uncommitted"})
    before = gw.client.submit(spec={"command": ["true"]})["id"]
    spec = {"name": "half", "array": "0-499", "command": ["true"]}
    with pytest.raises(FrontdeskError):
        gw.client.submit(spec=spec)
    until(lambda: gw.proc.poll() is not None, timeout=60, what="the gateway to die at array_uncommitted")
    assert gw.proc.returncode == -9
    gw.env.pop("FRONTDESK_FAULT")
    gw.start()
    ids = [j["id"] for j in gw.client.jobs(limit=1000)]
    assert ids == [before]  # neither the parent nor any task
    assert all(e["job_id"] in (before, None) for e in gw.client.events(since=0))  # nor its events
    again = gw.client.submit(spec=spec)
    assert sum(gw.client.job(again["id"])["array"]["counts"].values()) == 500
