"""A job's end reaches the gateway as one datagram from its shepherd (backends/local/ends.py), and its waiter is
answered with the report exactly as stored. Real shepherds, real jobs, a real gateway process."""

from __future__ import annotations

import asyncio
import json
import shlex
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from backend_helpers import make_job, run, until_ended
from frontdesk.backends.base import BackendStatus, JobState
from frontdesk.backends.local import LocalBackend
from frontdesk.backends.shepherd import _send_end
from frontdesk.config import Settings


def _settings(home: Path) -> Settings:
    return Settings(home=home, runtime_dir=home / "run", socket=home / "run" / "none.sock", local_cpus=2)


@pytest.fixture
def home() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="fd-ends-", dir="/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


async def _one_job(settings: Settings) -> tuple[LocalBackend, str, BackendStatus, list[str]]:
    pushed: list[str] = []
    b = LocalBackend(settings)
    await b.start(pushed.extend)
    bid = await b.submit(make_job(settings, ["sh", "-c", "echo hi"]))
    status = (await until_ended(b, [bid]))[bid]
    for _ in range(400):  # the shepherd's notice is read on this loop; the reap pass may come first
        if b.ends.received or not b.ends.bound:
            break
        await asyncio.sleep(0.05)
    await b.stop()
    return b, bid, status, pushed


def test_the_end_arrives_as_one_notice_from_the_shepherd(home: Path) -> None:
    b, bid, status, pushed = run(_one_job(_settings(home)))
    assert status.state is JobState.COMPLETED
    launch = json.loads((home / "local" / bid / "launch.json").read_text())
    assert launch["ends_socket"] == str(home / "local" / "ends.sock")
    assert (b.ends.received, b.ends.dropped) == (1, 0) and bid in pushed
    assert not (home / "local" / "ends.sock").exists()  # removed at stop


def test_without_a_channel_the_job_still_ends(home: Path) -> None:
    deep = home / ("d" * 50) / ("e" * 50)  # <home>/local/ends.sock is too long for a Unix socket address
    deep.mkdir(parents=True)
    b, bid, status, _ = run(_one_job(_settings(deep)))
    assert status.state is JobState.COMPLETED and not b.ends.bound
    assert json.loads((deep / "local" / bid / "launch.json").read_text())["ends_socket"] is None


def test_the_waiter_gets_the_report_as_stored(gateway: Any, workdir: Path) -> None:
    c = gateway.client
    job = c.submit(
        spec={"command": ["sh", "-c", "echo 'loss=0.25'; echo oops >&2; exit 3"]}, context={"cwd": str(workdir)}
    )
    woken = c.wait([job["id"]], "all", 60)  # parked before the end: answered with the report its end handed over
    again = c.wait([job["id"]], "all", 60)  # after the end: read back from the store
    assert woken["reports"][0]["state"] == "FAILED" and woken["reports"][0]["exit_code"] == 3
    assert woken == again and woken["reports"][0] == c.report(job["id"])


def test_a_restarted_gateway_takes_over_the_channel_a_killed_one_left(gateway: Any, workdir: Path) -> None:
    c = gateway.client
    gate = workdir / "gate"
    job = c.submit(
        spec={"command": ["sh", "-c", f"while [ ! -e {shlex.quote(str(gate))} ]; do sleep 0.05; done"]},
        context={"cwd": str(workdir)},
    )
    gateway.wait_state(job["id"], {"RUNNING"})
    gateway.kill9()
    sock = gateway.home / "local" / "ends.sock"
    assert sock.exists() and not _send_end(str(sock), "0.0")  # left behind, and nobody reads it
    gate.touch()  # the job ends while the gateway is down: its notice finds no reader, its result stays
    gateway.start()
    assert c.wait([job["id"]], "all", 60)["reports"][0]["state"] == "COMPLETED"
    assert _send_end(str(sock), "0.0")  # bound again (a stranger's notice is dropped, never acted on)
    after = c.submit(spec={"command": ["true"]}, context={"cwd": str(workdir)})
    assert c.wait([after["id"]], "all", 60)["reports"][0]["state"] == "COMPLETED"
