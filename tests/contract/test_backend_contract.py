"""One contract, every backend: what the gateway relies on, run against the embedded executor and real Slurm.

Backend-specific behaviour (the local queue and shepherd, Slurm's single controller query, typed GPUs) is
tested beside each backend: tests/integration/test_local_backend_contract.py and tests/slurm/.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from backend_helpers import make_job, run, started, until_ended
from frontdesk.backends.base import Backend, BackendStatus, JobState
from frontdesk.config import Settings
from frontdesk.gateway import make_backend


@pytest.fixture(params=["local", pytest.param("slurm", marks=pytest.mark.slurm)])
def settings(request: pytest.FixtureRequest) -> Iterator[Settings]:
    """Settings for a fresh backend of each kind, under a home whose path has a space in it."""
    if request.param == "slurm":
        yield request.getfixturevalue("slurm_settings")
        return
    home = Path(tempfile.mkdtemp(prefix="fd local-", dir="/tmp"))
    yield Settings(
        home=home, runtime_dir=home / "run", socket=home / "run" / "none.sock", local_cpus=2, local_memory="2G"
    )


def test_is_a_backend(settings: Settings) -> None:
    assert isinstance(make_backend(settings), Backend)


def test_runs_with_env_and_reports_output_and_usage(settings: Settings) -> None:
    code = "import os; x = bytearray(64 * 2**20); sum(range(3 * 10**6)); print(os.environ['GREETING'])"

    async def go() -> BackendStatus:
        b = await started(settings)
        bid = await b.submit(
            make_job(settings, [sys.executable, "-c", code], memory_bytes=512 * 2**20, walltime_seconds=300)
        )
        return (await until_ended(b, [bid]))[bid]

    st = run(go())
    assert st.state is JobState.COMPLETED and st.exit_code == 0, st
    assert st.stdout_path is not None and st.stdout_path.read_text() == 'it\'s "quoted" $HOME\n'
    assert st.usage is not None and st.usage.peak_rss_bytes and st.usage.peak_rss_bytes >= 64 * 2**20
    assert st.usage.cpu_seconds is not None and st.usage.cpu_seconds > 0
    assert st.started_at and st.ended_at and st.ended_at >= st.started_at


def test_non_zero_exit_is_failed_with_its_code(settings: Settings) -> None:
    async def go() -> BackendStatus:
        b = await started(settings)
        bid = await b.submit(make_job(settings, ["sh", "-c", "echo oops >&2; exit 3"]))
        return (await until_ended(b, [bid]))[bid]

    st = run(go())
    assert (st.state, st.exit_code) == (JobState.FAILED, 3)
    assert st.stderr_path is not None and st.stderr_path.read_text() == "oops\n"


def test_batched_query_leaves_out_unknown_ids(settings: Settings) -> None:
    async def go() -> tuple[dict[str, BackendStatus], list[str]]:
        b = await started(settings)
        ids = [await b.submit(make_job(settings, ["true"])) for _ in range(4)]
        await until_ended(b, ids)
        return await b.query([*ids, "99999999"]), ids

    got, ids = run(go())
    assert set(got) == set(ids)


def test_cancel_running(settings: Settings) -> None:
    async def go() -> BackendStatus:
        b = await started(settings)
        bid = await b.submit(make_job(settings, ["sleep", "300"]))
        for _ in range(300):
            if (await b.query([bid]))[bid].state is JobState.RUNNING:
                break
            await asyncio.sleep(0.1)
        await b.cancel(bid)
        return (await until_ended(b, [bid]))[bid]

    assert run(go()).state is JobState.CANCELLED


def test_out_of_memory_is_its_own_state(settings: Settings, request: pytest.FixtureRequest) -> None:
    if settings.backend == "slurm":
        request.getfixturevalue("memory_enforced")
    code = "import time; x = bytearray(600 * 2**20); time.sleep(3)"

    async def go() -> BackendStatus:
        b = await started(settings)
        bid = await b.submit(make_job(settings, [sys.executable, "-c", code], memory_bytes=100 * 2**20))
        return (await until_ended(b, [bid]))[bid]

    assert run(go()).state is JobState.OUT_OF_MEMORY


@pytest.mark.slow
def test_walltime_is_timeout(settings: Settings) -> None:
    async def go() -> BackendStatus:
        b = await started(settings)
        bid = await b.submit(make_job(settings, ["sleep", "600"], walltime_seconds=1))
        return (await until_ended(b, [bid]))[bid]

    assert run(go()).state is JobState.TIMEOUT


def test_a_fresh_instance_finds_attempts_by_key(settings: Settings) -> None:
    async def go() -> tuple[dict[str, str], str, BackendStatus]:
        b = await started(settings)
        job = make_job(settings, ["sleep", "1"])
        bid = await b.submit(job)
        await b.stop()
        fresh = await started(settings)  # a restarted gateway knows nothing but the key
        found = await fresh.lookup([job.key, "fd-999999.1"])
        return found, bid, (await until_ended(fresh, [bid]))[bid]

    found, bid, st = run(go())
    assert list(found.values()) == [bid]
    assert st.state is JobState.COMPLETED
