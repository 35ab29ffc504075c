"""Stopping the gateway stops its loops even when a wake-up lands in the same instant as the cancel.

On Python 3.11, `asyncio.wait_for` returns the result and drops the cancel when the awaited event is set in
the same pass of the loop as the cancel (gh-86296): the gateway's tick (and the embedded backend's loop)
then ran on, and a SIGTERM'd gateway never exited. These tests set the event and stop in the same pass.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from frontdesk.backends.local import LocalBackend
from frontdesk.config import Settings
from frontdesk.gateway import Gateway


def _settings(home: Path) -> Settings:
    return Settings(
        home=home,
        runtime_dir=home / "run",
        socket=home / "run" / "gw.sock",
        sections={"gateway": {"plugins": []}},
    )


async def _stopped(stopping: asyncio.Future[None], loop_task: asyncio.Task[None] | None) -> None:
    """`stopping` returns and the loop's task has ended (a hang detector: a lost cancel never ends)."""
    done, _ = await asyncio.wait({stopping}, timeout=10)  # asyncio.wait: cancels nothing itself
    ended = loop_task is not None and loop_task.done()
    for task in (stopping, loop_task):
        if task is not None and not task.done():
            task.cancel()
    assert stopping in done, "stop() never returned: a loop ignored its cancel"
    assert ended, "the loop's task still runs after stop()"


@pytest.mark.parametrize("passes", [0, 1, 2])
def test_the_gateway_stops_when_its_tick_is_woken_as_it_is_cancelled(tmp_path: Path, passes: int) -> None:
    async def run() -> None:
        gw = Gateway(_settings(tmp_path), redact=lambda text: text)
        await gw.start()
        for _ in range(3):
            await asyncio.sleep(0)  # the tick is parked on its wake-up event
        gw._wake.set()
        for _ in range(passes):
            await asyncio.sleep(0)
        await _stopped(asyncio.ensure_future(gw.stop()), gw._tick_task)

    asyncio.run(run())


def test_the_embedded_backend_stops_when_woken_as_it_is_cancelled(tmp_path: Path) -> None:
    async def run() -> None:
        gw = Gateway(_settings(tmp_path), redact=lambda text: text)
        backend = gw.backend
        assert isinstance(backend, LocalBackend)
        await backend.start(lambda ids: None)
        for _ in range(3):
            await asyncio.sleep(0)
        backend._wake.set()
        await _stopped(asyncio.ensure_future(backend.stop()), backend._task)

    asyncio.run(run())
