"""A job's end tells its long-polls before the bus's subscribers run (issue 21): a subscriber such as the agents
plug-in's delivery to a session writes to the database, and the waiting client must not wait for it. Also: what
a plug-in publishes while the end is being stored is fanned out only after the end's commit (`Bus.holding`).

Real parts: the store on a SQLite file, the bus and its waiters, the end's own `_told`."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from frontdesk.core import ending
from frontdesk.core.deps import Waiting
from frontdesk.events.bus import Bus
from frontdesk.events.models import Event, EventKind
from frontdesk.store.db import open_db
from frontdesk.store.jobs import JobStore


class _Parts:
    """What `ending._told` uses of a gateway: its store, bus, waiting set and tick flag (all real)."""

    def __init__(self, path: Path) -> None:
        self.store = JobStore(open_db(path))
        self.bus = Bus()
        self.waiting = Waiting()
        self._wake = asyncio.Event()


def _ended_job(store: JobStore) -> Any:
    rec = store.insert_job_record(
        name="n", spec=json.dumps({"command": ["true"]}), context="{}", state="RUNNING", principal="p",
        submitted_at=time.time(), backend="local", session="s1",
    )  # fmt: skip
    return ending.ended_record(rec, {"state": "COMPLETED", "ended_at": time.time(), "report_pending": 2})


def test_the_long_poll_answers_before_the_subscribers_run(tmp_path: Path) -> None:
    async def scenario() -> list[str]:
        gw = _Parts(tmp_path / "fd.db")
        rec = _ended_job(gw.store)
        seen: list[str] = []
        flag = gw.bus.waiters.watch([rec.id])

        async def long_poll() -> None:
            await flag.wait()
            seen.append(f"answered with {flag.reports[rec.id]['state']}")

        gw.bus.subscribe(lambda e: seen.append(f"subscriber got {e.kind}"))
        poll = asyncio.get_running_loop().create_task(long_poll())
        await asyncio.sleep(0)  # the long-poll is parked on its flag
        report = {"job_id": rec.id, "state": "COMPLETED"}
        with gw.store.transaction(), gw.bus.holding() as held:
            stored = gw.store.end_job(rec.id, {"state": "COMPLETED"}, None, json.dumps(report), [])
        assert held == [] and stored == []
        event = gw.store.append_event(Event(EventKind.JOB_REPORT, data={"report": report}, job_id=rec.id))
        await ending._told(gw, rec, report, [event])  # type: ignore[arg-type]
        await poll
        return seen

    assert asyncio.run(scenario()) == ["answered with COMPLETED", "subscriber got job.report"]


def test_what_is_published_inside_the_end_is_fanned_out_after_its_commit(tmp_path: Path) -> None:
    gw = _Parts(tmp_path / "fd.db")
    got: list[int] = []
    gw.bus.subscribe(lambda e: got.append(e.seq))
    with gw.store.transaction(), gw.bus.holding() as held:
        lesson = gw.store.append_event(Event(EventKind.LESSON_RECORDED, data={"lesson": 1}))
        gw.bus.fanout(lesson)  # what Gateway.publish does: stored, then handed to the bus
        assert got == [] and held == [lesson]  # not yet: the commit may still fail
    assert got == []  # the end fans it out (`_told`), once committed
    for event in held:
        gw.bus.fanout(event)
    assert got == [lesson.seq]
    try:
        with gw.store.transaction(), gw.bus.holding() as dropped:
            gw.bus.fanout(gw.store.append_event(Event(EventKind.LESSON_RECORDED, data={"lesson": 2})))
            raise RuntimeError("the end's commit failed")
    except RuntimeError:
        pass
    assert len(dropped) == 1 and got == [lesson.seq]  # rolled back: never told
    assert [e.data["lesson"] for e in gw.store.events_since(0)] == [1]
    gw.bus.fanout(lesson)  # held no more
    assert got == [lesson.seq, lesson.seq]
