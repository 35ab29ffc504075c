"""LocalBackend beyond the shared contract (tests/contract): its queue, shepherd, watchdog and GPUs."""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from backend_helpers import make_job, run, started, until_ended
from frontdesk.backends.base import BackendStatus, JobState
from frontdesk.backends.local import FreeResources, QueuedJob, greedy_pick
from frontdesk.config import Settings


@pytest.fixture
def settings() -> Iterator[Settings]:
    home = Path(tempfile.mkdtemp(prefix="fd local-", dir="/tmp"))
    yield Settings(
        home=home,
        runtime_dir=home / "run",
        socket=home / "run" / "none.sock",
        local_cpus=2,
        local_memory="2G",
        local_gpus=2,
    )


def test_exit_code_and_signal(settings: Settings) -> None:
    async def go() -> tuple[BackendStatus, BackendStatus]:
        b = await started(settings)
        a = await b.submit(make_job(settings, ["sh", "-c", "echo oops >&2; exit 3"]))
        k = await b.submit(make_job(settings, ["sh", "-c", "kill -SEGV $$"]))
        got = await until_ended(b, [a, k])
        return got[a], got[k]

    failed, killed = run(go())
    assert (failed.state, failed.exit_code) == (JobState.FAILED, 3)
    assert failed.stderr_path is not None and failed.stderr_path.read_text() == "oops\n"
    assert killed.state is JobState.FAILED and killed.signal == 11


def test_missing_program_fails_cleanly(settings: Settings) -> None:
    async def go() -> BackendStatus:
        b = await started(settings)
        bid = await b.submit(make_job(settings, ["/no/such/program"]))
        return (await until_ended(b, [bid]))[bid]

    st = run(go())
    assert st.state is JobState.FAILED and st.exit_code == 127 and "cannot start" in (st.reason or "")


def test_cancel_queued_and_running(settings: Settings) -> None:
    async def go() -> tuple[BackendStatus, BackendStatus]:
        b = await started(settings)
        r = await b.submit(make_job(settings, ["sleep", "300"], cpus=2))
        q = await b.submit(make_job(settings, ["sleep", "300"], cpus=2))
        for _ in range(200):
            if (await b.query([r]))[r].state is JobState.RUNNING:
                break
            await asyncio.sleep(0.05)
        assert (await b.query([q]))[q].state is JobState.PENDING
        await b.cancel(q)
        await b.cancel(r)
        got = await until_ended(b, [r, q])
        return got[r], got[q]

    running, queued = run(go())
    assert running.state is JobState.CANCELLED and queued.state is JobState.CANCELLED
    assert queued.started_at is None


def test_rss_watchdog_when_no_cgroup(settings: Settings) -> None:
    """The fallback where no memory cgroup can be made (not root, no delegation), in a real shepherd."""
    import json
    import os
    import subprocess

    adir = settings.home / "manual"
    adir.mkdir()
    out = settings.home / "out"
    out.mkdir()
    (adir / "launch.json").write_text(
        json.dumps(
            {
                "backend_id": "manual",
                "argv": [sys.executable, "-c", "import time; x = bytearray(400 * 2**20); time.sleep(10)"],
                "cwd": str(settings.home),
                "env": {"PATH": "/usr/bin:/bin"},
                "stdout": str(out / "o"),
                "stderr": str(out / "e"),
                "memory_bytes": 100 * 2**20,
                "walltime_seconds": 30,
            }
        )
    )
    env = {**os.environ, "FRONTDESK_NO_CGROUP": "1"}
    shepherd = [sys.executable, "-m", "frontdesk.backends.shepherd", str(adir)]
    subprocess.run(shepherd, env=env, check=True, timeout=60)
    result = json.loads((adir / "result.json").read_text())
    assert result["state"] == "OUT_OF_MEMORY" and result["enforcement"] == "rss"
    assert result["peak_rss_bytes"] > 100 * 2**20
    subprocess.run(shepherd, env=env, check=True, timeout=60)  # a second launch of one attempt is a no-op
    assert json.loads((adir / "result.json").read_text()) == result


def test_gpu_types_and_counts_are_respected() -> None:
    free = FreeResources(cpus=8, memory_bytes=10**10, gpus=(0, 1, 2), gpu_models={0: "A100", 1: "H100", 2: "H100"})

    def q(i: int, gpus: int, types: tuple[str, ...] = (), prio: int = 0) -> QueuedJob:
        return QueuedJob(
            backend_id=str(i),
            job_id=i,
            cpus=1,
            memory_bytes=0,
            gpus=gpus,
            gpu_types=types,
            walltime_seconds=None,
            priority=prio,
            queued_at=float(i),
        )

    assert greedy_pick([q(1, 2, ("h100",)), q(2, 1, ("h100",)), q(3, 1, ("a100",))], free, 0) == ["1", "3"]
    assert greedy_pick([q(1, 1), q(2, 4), q(3, 1, prio=5)], free, 0) == ["3", "1"]


def test_lookup_and_recovery_by_a_new_instance(settings: Settings) -> None:
    async def go() -> tuple[dict[str, str], BackendStatus, BackendStatus]:
        b = await started(settings)
        running = make_job(settings, ["sleep", "1"], cpus=2)
        queued = make_job(settings, ["true"], cpus=2)
        rid, qid = await b.submit(running), await b.submit(queued)
        await asyncio.sleep(0.3)
        await b.stop()  # the gateway went away; shepherds carry on
        fresh = await started(settings)
        found = await fresh.lookup([running.key, queued.key, "fd-424242.1"])
        got = await until_ended(fresh, [rid, qid])
        return found, got[rid], got[qid]

    found, r, q = run(go())
    assert set(found.values()) == {r.backend_id, q.backend_id}
    assert r.state is JobState.COMPLETED and q.state is JobState.COMPLETED


def test_gpu_usage_sampled_where_nvidia_smi_answers(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No GPU on CI machines: a stand-in nvidia-smi on PATH answers the same query the real one does."""
    import os

    bindir = tmp_path / "bin"
    bindir.mkdir()
    tool = bindir / "nvidia-smi"
    tool.write_text("#!/bin/sh\necho \"$@\" >> \"$0.args\"\necho '0, 87, 30512'\necho '1, 45, 10240'\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")

    async def go() -> BackendStatus:
        b = await started(settings)
        bid = await b.submit(make_job(settings, ["sleep", "0.5"], gpus=2))
        return (await until_ended(b, [bid]))[bid]

    st = run(go())
    assert st.usage is not None and st.usage.gpu_util_percent == 66.0
    assert st.usage.gpu_mem_peak_bytes == (30512 + 10240) * 2**20
    assert "-i 0,1" in (bindir / "nvidia-smi.args").read_text()


def test_parse_gpu_sample() -> None:
    from frontdesk.backends.shepherd import parse_gpu_sample

    assert parse_gpu_sample("0, 87, 30512\n1, [N/A], 10\nGPU junk\n\n3, 5, 1.5\n") == [
        (0, 87.0, 30512 * 2**20),
        (3, 5.0, int(1.5 * 2**20)),
    ]
