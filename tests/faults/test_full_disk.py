"""Item 7 of issue 12: a full state disk. Submits answer one clear JSON error, running jobs that exit 0 end
COMPLETED (not NODE_FAIL) once space is back, nothing accepted is lost; a low-disk drain says why.

The state directory is a small tmpfs (root only), filled with a ballast file and freed again."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fault_helpers import alive, raw_request, small_tmpfs, until

pytestmark = pytest.mark.slow


@pytest.fixture
def small_home() -> Iterator[Path]:
    with small_tmpfs("fd-full-", keep=bool(os.environ.get("FD_KEEP"))) as home:
        yield home


def _fill(home: Path) -> Path:
    """Fill the filesystem to the last byte (a ballast file); returns it, to free space later."""
    ballast = home / "ballast"
    with open(ballast, "wb", buffering=0) as fh:
        for size in (1024 * 1024, 4096, 1):
            try:
                while True:
                    fh.write(b"\0" * size)
            except OSError:
                pass
    return ballast


def test_full_state_disk(gateway_factory: Any, small_home: Path, tmp_path: Path) -> None:
    gw = gateway_factory(env={"FRONTDESK_PLUGINS": "none"}, home=small_home, config="[local]\ncpus = 1\n")
    gate = tmp_path / "gate"
    running = gw.client.submit(
        spec={"command": ["/bin/sh", "-c", f"while [ ! -e '{gate}' ]; do sleep 0.05; done"]},
        context={"cwd": str(tmp_path)},
    )
    bid = gw.wait_state(running["id"], {"RUNNING"})["backend_id"]
    queued = gw.client.submit(spec={"command": ["true"]})  # waits for the one CPU
    until((small_home / "local" / bid / "started.json").exists, what="started.json")
    job_pid = json.loads((small_home / "local" / bid / "started.json").read_text())["pid"]
    log_before = gw.log().count("Traceback")
    ballast = _fill(small_home)
    gate.touch()  # the running job exits 0 while the disk is full
    until(lambda: not alive(job_pid), what="the job to exit")
    body = json.dumps({"spec": {"command": ["true"]}}).encode()
    answers = [raw_request(gw.socket, "POST", "/v1/jobs", body) for _ in range(5)]
    for status, raw in answers:
        payload = json.loads(raw)
        assert status in (503, 507) and "disk" in payload["message"] and "\n" not in payload["message"], raw
    # its shepherd waits for space to write the result: the job is not declared lost
    assert gw.client.job(running["id"])["state"] == "RUNNING"
    assert gw.client.job(queued["id"])["state"] == "PENDING"
    ballast.unlink()
    reps = gw.client.wait([running["id"], queued["id"]], "all", 60)["reports"]
    assert [r["state"] for r in reps] == ["COMPLETED", "COMPLETED"]
    assert gw.log().count("Traceback") - log_before <= 1, gw.log()[-3000:]
    after = gw.client.submit(spec={"command": ["true"]})
    assert gw.client.wait([after["id"]], "all", 60)["reports"][0]["state"] == "COMPLETED"


def test_a_disk_full_launch_keeps_the_job_queued_and_says_why(small_home: Path) -> None:
    import asyncio

    from backend_helpers import make_job
    from frontdesk.backends.base import JobState
    from frontdesk.config import Settings
    from frontdesk.gateway import make_backend

    settings = Settings(home=small_home, runtime_dir=small_home / "run", socket=small_home / "run" / "none.sock")

    async def go() -> tuple[str | None, JobState, JobState]:
        backend = make_backend(settings)
        bid = await backend.submit(make_job(settings, ["true"]))  # accepted and queued: launch.json written
        ballast = _fill(small_home)
        await backend.start(lambda ids: None)  # the launch cannot rewrite its files
        for _ in range(100):
            status = (await backend.query([bid]))[bid]
            if status.reason and "Disk full" in status.reason:
                break
            await asyncio.sleep(0.05)
        held = status.reason, status.state
        ballast.unlink()
        for _ in range(200):
            status = (await backend.query([bid]))[bid]
            if status.state.terminal:
                break
            await asyncio.sleep(0.05)
        await backend.stop()
        return held[0], held[1], status.state

    reason, held_state, end = asyncio.run(go())
    assert held_state is JobState.PENDING and reason is not None and "Disk full" in reason
    assert end is JobState.COMPLETED


def test_low_disk_drain_says_why(gateway_factory: Any, tmp_path: Path) -> None:
    config = '[local]\ncpus = 1\n[policy.health]\nmin_free_disk = "1024P"\ninterval = 1\n'
    gw = gateway_factory(env={"FRONTDESK_PLUGINS": "policy"}, config=config)
    until(lambda: "low disk space" in gw.log(), what="the drain warning in the log")
    job = gw.client.submit(spec={"command": ["true"]})
    assert any("disk" in w for w in job["warnings"]), job["warnings"]
    until(lambda: "low disk space" in (gw.client.job(job["id"])["reason"] or ""), what="a PENDING reason")
    assert gw.client.job(job["id"])["state"] == "PENDING"
    kinds = [e["kind"] for e in gw.client.events(since=0)]
    assert "node.drained" in kinds
