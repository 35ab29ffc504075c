"""The delivery loop over a real SQLite store and the real bus: batching, exactly once, leases, idle-only.

A small in-process gateway stands in for the HTTP layer (the real one is exercised in
tests/integration/test_hooks*.py); time is real but the windows are short.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from frontdesk.agents.model import TurnState
from frontdesk.agents.plugin import AgentsPlugin
from frontdesk.config import load_settings
from frontdesk.events.bus import Bus
from frontdesk.events.models import Event, EventKind
from frontdesk.store.db import open_db
from frontdesk.store.jobs import JobStore


class MiniGateway:
    def __init__(self, home: Path) -> None:
        self.store = JobStore(open_db(home / "frontdesk.db"))
        self.bus = Bus()
        self.events: list[Event] = []

    def publish(self, event: Event) -> Event:
        stored = self.store.append_event(event)
        self.events.append(stored)
        self.bus.fanout(stored)
        return stored

    def report(self, job_id: int, session: str = "s1", user: str = "alice", state: str = "COMPLETED") -> None:
        self.publish(
            Event(
                EventKind.JOB_REPORT,
                job_id=job_id,
                session=session,
                principal=user,
                data={
                    "report": {
                        "job_id": job_id,
                        "name": f"j{job_id}",
                        "state": state,
                        "text": f"frontdesk job {job_id}: {state}",
                    }
                },
            )
        )

    def running(self, job_id: int, session: str = "s1", state: str = "RUNNING") -> None:
        """A job row in the core table (the plug-in batches only while the session has jobs running)."""
        self.store.conn.execute(
            "INSERT OR REPLACE INTO jobs(id, spec, state, backend, principal, session, submitted_at) "
            "VALUES(?, '{}', ?, 'local', 'alice', ?, 0)",
            (job_id, state, session),
        )

    def wakes(self) -> list[dict[str, Any]]:
        return [e.data for e in self.events if e.kind is EventKind.SESSION_WAKE]


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("FRONTDESK_HOME", str(tmp_path))
    (tmp_path / "frontdesk.toml").write_text('[agents]\nbatch_window_s = 0.3\nlease_s = 0.5\nchannels = ["hooks"]\n')
    return load_settings()


def _run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 20))


async def _attached(settings: Any, home: Path) -> tuple[AgentsPlugin, MiniGateway]:
    gw = MiniGateway(home)
    plugin = AgentsPlugin(settings)
    plugin.attach(gw)
    assert plugin.store is not None
    plugin.store.upsert("alice", "s1", plugin.clock(), "claude-code", "/w")
    return plugin, gw


def test_two_reports_close_together_are_one_wake_delivered_once(settings: Any, tmp_path: Path) -> None:
    async def go() -> None:
        plugin, gw = await _attached(settings, tmp_path)
        s = plugin.store.get("alice", "s1")  # type: ignore[union-attr]
        waiter = asyncio.create_task(plugin.wait_for_reports(s, "stop", 5))
        await asyncio.sleep(0.05)
        gw.running(2)  # job 2 still runs when job 1 ends: its report waits for the batch
        gw.report(1)
        await asyncio.sleep(0.1)
        gw.running(2, state="COMPLETED")
        gw.report(2)
        gw.report(2)  # the same report twice is stored once
        got = await waiter
        assert got["delivery"] and got["jobs"] == [1, 2]
        assert "2 jobs you submitted ended" in got["text"]
        assert plugin.acknowledge(plugin.store.get("alice", "s1"), 2, "hooks") == [1, 2]  # type: ignore[union-attr]
        assert plugin.store.unread(("alice", "s1")) == []  # type: ignore[union-attr]
        again = await plugin.wait_for_reports(plugin.store.get("alice", "s1"), "stop", 0.2)  # type: ignore[union-attr]
        assert not again.get("delivery")
        assert gw.wakes() == [{"channel": "hooks", "jobs": [1, 2], "ok": True}]
        await plugin.stop()

    _run(go())


def test_a_hook_that_never_acks_gets_the_batch_again_after_the_lease(settings: Any, tmp_path: Path) -> None:
    async def go() -> None:
        plugin, gw = await _attached(settings, tmp_path)
        gw.report(5)
        first = await plugin.wait_for_reports(plugin.store.get("alice", "s1"), "stop", 3)  # type: ignore[union-attr]
        assert first["jobs"] == [5]
        # no ack: a second hook waits while the lease holds, then gets the same report
        second = await plugin.wait_for_reports(plugin.store.get("alice", "s1"), "stop", 3)  # type: ignore[union-attr]
        assert second["jobs"] == [5]
        await plugin.stop()

    _run(go())


def test_the_background_hook_waits_for_the_turn_to_end(settings: Any, tmp_path: Path) -> None:
    async def go() -> None:
        plugin, gw = await _attached(settings, tmp_path)
        st = plugin.store
        assert st is not None
        st.set_turn(("alice", "s1"), TurnState.IN_TURN, plugin.clock())
        task = asyncio.create_task(plugin.wait_for_reports(st.get("alice", "s1"), "rewake", 5))  # type: ignore[arg-type]
        await asyncio.sleep(0.05)
        gw.report(9)
        await asyncio.sleep(0.8)  # batch settled, but mid-turn: not delivered
        assert not task.done() and st.unread(("alice", "s1"))
        plugin.set_turn(st.get("alice", "s1"), TurnState.IDLE)  # type: ignore[arg-type]
        got = await task
        assert got["jobs"] == [9] and got["role"] == "rewake"
        await plugin.stop()

    _run(go())


def test_a_newer_background_hook_supersedes_the_older(settings: Any, tmp_path: Path) -> None:
    async def go() -> None:
        plugin, gw = await _attached(settings, tmp_path)
        st = plugin.store
        assert st is not None
        old = asyncio.create_task(plugin.wait_for_reports(st.get("alice", "s1"), "rewake", 5))  # type: ignore[arg-type]
        await asyncio.sleep(0.05)
        new = asyncio.create_task(plugin.wait_for_reports(st.get("alice", "s1"), "rewake", 0.3))  # type: ignore[arg-type]
        assert (await old) == {"delivery": None, "superseded": True}
        assert not (await new).get("delivery")
        await plugin.stop()

    _run(go())


def test_unread_reports_survive_a_restart(settings: Any, tmp_path: Path) -> None:
    async def first() -> None:
        plugin, gw = await _attached(settings, tmp_path)
        gw.report(3)
        await plugin.stop()

    async def second() -> None:
        gw = MiniGateway(tmp_path)
        plugin = AgentsPlugin(settings)
        plugin.attach(gw)
        got = await plugin.wait_for_reports(plugin.store.get("alice", "s1"), "stop", 3)  # type: ignore[union-attr]
        assert got["jobs"] == [3]
        await plugin.stop()

    _run(first())
    _run(second())


def test_a_session_id_is_each_users_own(settings: Any, tmp_path: Path) -> None:
    """mallory's session s1 is another session than alice's s1: her reports reach hers only, and back."""

    async def go() -> None:
        plugin, gw = await _attached(settings, tmp_path)
        theirs, created = plugin.store.upsert("mallory", "s1", plugin.clock())  # type: ignore[union-attr]
        assert created and theirs.user == "mallory"
        gw.report(4, user="mallory")  # a job of mallory's naming s1: her own s1
        assert plugin.store.unread(("alice", "s1")) == []  # type: ignore[union-attr]
        assert [r.job_id for r in plugin.store.unread(("mallory", "s1"))] == [4]  # type: ignore[union-attr]
        gw.report(5)  # alice's
        assert [r.job_id for r in plugin.store.unread(("alice", "s1"))] == [5]  # type: ignore[union-attr]
        assert [r.job_id for r in plugin.store.unread(("mallory", "s1"))] == [4]  # type: ignore[union-attr]
        await plugin.stop()

    _run(go())


def test_no_channel_parks_the_batch_with_a_visible_reason(settings: Any, tmp_path: Path) -> None:
    async def go() -> None:
        plugin, gw = await _attached(settings, tmp_path)
        gw.report(6)
        for _ in range(600):  # until the batch window (0.3 s) passed and the loop parked it (later under load)
            await asyncio.sleep(0.05)
            s = plugin.store.get("alice", "s1")  # type: ignore[union-attr]
            if s is not None and (s.last_reason or "").startswith("waiting for the next hook"):
                break
        assert s is not None and s.last_reason and s.last_reason.startswith("waiting for the next hook")
        assert plugin.batcher.next_due() is None
        claimed = plugin.claim_now(s)
        assert claimed["jobs"] == [6]
        await plugin.stop()

    _run(go())


def test_a_report_with_nothing_else_running_skips_the_batch_window(settings: Any, tmp_path: Path) -> None:
    async def go() -> None:
        plugin, gw = await _attached(settings, tmp_path)
        waiter = asyncio.create_task(plugin.wait_for_reports(plugin.store.get("alice", "s1"), "stop", 5))  # type: ignore
        await asyncio.sleep(0.05)
        gw.report(8)
        assert plugin.batcher.due(plugin.clock()) == [("alice", "s1")]  # due at once, not a window later
        got = await waiter
        assert got["jobs"] == [8]
        await plugin.stop()

    _run(go())
