"""Item 6 of issue 12: waiters are indexed by the job they wait for; an event wakes only its own waiters."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from frontdesk.events.bus import Bus
from frontdesk.events.models import Event, EventKind


def test_an_event_wakes_only_the_waiters_of_its_job() -> None:
    async def go() -> tuple[list[bool], int, int]:
        bus = Bus()
        flags = [bus.waiters.watch([i]) for i in range(2000)]
        both = bus.waiters.watch([7, 1500])
        bus.fanout(Event(EventKind.JOB_REPORT, job_id=7))
        woken = [f.is_set() for f in flags]
        await asyncio.sleep(0)
        for i, f in enumerate(flags):
            bus.waiters.unwatch([i], f)
        left = len(bus.waiters)
        bus.waiters.unwatch([7, 1500], both)
        return woken + [both.is_set()], left, bus.waiters.jobs_watched()

    woken, left, jobs = asyncio.run(go())
    assert [i for i, w in enumerate(woken) if w] == [7, 2000]
    assert left == 1 and jobs == 0


def test_events_without_a_job_wake_no_waiter_and_shutdown_wakes_all() -> None:
    async def go() -> tuple[bool, bool]:
        bus = Bus()
        flag = bus.waiters.watch([1])
        bus.fanout(Event(EventKind.POLICY_LOADED, data={"version": 1}))
        quiet = flag.is_set()
        bus.waiters.wake_all()
        await asyncio.sleep(0)
        return quiet, flag.is_set()

    assert asyncio.run(go()) == (False, True)


@pytest.mark.slow
def test_many_parked_waiters_each_get_exactly_their_report(gateway_factory: Any) -> None:
    import threading

    gw = gateway_factory(env={"FRONTDESK_PLUGINS": "none"})
    gate = gw.home / "gate"
    ids = [
        gw.client.submit(spec={"command": ["/bin/sh", "-c", f"while [ ! -e {gate} ]; do sleep 0.05; done; echo {i}"]})[
            "id"
        ]
        for i in range(4)
    ]
    got: dict[int, Any] = {}

    def park(job_id: int) -> None:
        got[job_id] = gw.client.wait([job_id], "all", 60)

    threads = [threading.Thread(target=park, args=(i,)) for i in ids for _ in range(25)]
    for t in threads:
        t.start()
    gate.touch()
    for t in threads:
        t.join(90)
    assert sorted(got) == sorted(ids)
    for job_id, res in got.items():
        assert res["done"] and [r["job_id"] for r in res["reports"]] == [job_id]


def test_an_end_hands_its_report_to_its_own_waiters_only() -> None:
    async def go() -> tuple[dict[int, Any], dict[int, Any], bool, int]:
        bus = Bus()
        mine, other = bus.waiters.watch([3, 4]), bus.waiters.watch([5])
        report = {"job_id": 3, "state": "COMPLETED"}
        woken = bus.waiters.ended(3, report)
        return mine.reports, other.reports, mine.is_set() and not other.is_set(), woken

    mine, other, woken_right, woken = asyncio.run(go())
    assert mine == {3: {"job_id": 3, "state": "COMPLETED"}} and other == {} and woken_right and woken == 1
