"""SlurmBackend against the real lab cluster: submit, one batched query, cancel, OOM, walltime, lookup."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest

from frontdesk.backends.base import Backend, BackendJob, BackendStatus, JobState
from frontdesk.backends.slurm.backend import SlurmBackend
from frontdesk.config import Settings

pytestmark = pytest.mark.slurm

_seq = iter(range(1, 10**6))
T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def make_job(settings: Settings, argv: list[str], workdir: Path | None = None, **kw: Any) -> BackendJob:
    n = next(_seq)
    job_dir = settings.jobs_dir / f"{n} dir" / "1"
    return BackendJob(
        job_id=n,
        attempt=1,
        name=f"t{n}",
        argv=argv,
        workdir=workdir or settings.home,
        env={"FRONTDESK_JOB_ID": str(n), "GREETING": 'it\'s "quoted" $HOME'},
        job_dir=job_dir,
        **{"partition": "test", **kw},
    )


async def until_ended(b: SlurmBackend, ids: list[str], timeout: float = 150) -> dict[str, BackendStatus]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        got = await b.query(ids)
        if all(i in got and got[i].state.terminal for i in ids):
            return got
        if loop.time() > deadline:
            raise AssertionError(f"not ended in {timeout}s: {got}")
        await asyncio.sleep(0.3)


async def started(settings: Settings) -> SlurmBackend:
    b = SlurmBackend(settings)
    await b.start(lambda ids: None)
    return b


def test_is_a_backend(slurm_settings: Settings) -> None:
    assert isinstance(SlurmBackend(slurm_settings), Backend)


def test_submit_runs_and_reports_usage_and_output(slurm_settings: Settings, tmp_path: Path) -> None:
    work = tmp_path / "work dir 'q'"
    work.mkdir()
    code = (
        "import os,sys; x=bytearray(64*2**20); sum(range(2*10**6)); "
        "print(os.getcwd(), os.environ['GREETING'])"
    )

    async def go() -> tuple[BackendJob, BackendStatus]:
        b = await started(slurm_settings)
        job = make_job(
            slurm_settings,
            [sys.executable, "-c", code],
            workdir=work,
            memory_bytes=512 * 2**20,
            walltime_seconds=300,
            cpus=2,
        )
        bid = await b.submit(job)
        return job, (await until_ended(b, [bid]))[bid]

    job, st = run(go())
    assert st.state is JobState.COMPLETED and st.exit_code == 0, st
    assert st.stdout_path == job.job_dir / "stdout"
    assert st.stdout_path.read_text() == f'{work} it\'s "quoted" $HOME\n'
    assert "#SBATCH --job-name=" + job.key in (job.job_dir / "sbatch.sh").read_text()
    assert st.usage is not None
    if "task/cgroup" in Path(slurm_settings.section("slurm")["conf"]).read_text():  # the job's own cgroup
        assert st.usage.peak_rss_bytes and st.usage.peak_rss_bytes >= 64 * 2**20
    assert st.usage.cpu_seconds is not None and st.usage.cpu_seconds > 0
    assert st.started_at and st.ended_at and st.submitted_at
    assert st.node in {"cpu1", "cpu2", "a100n1", "h100n1"}


def test_exit_code_is_failed_with_code(slurm_settings: Settings) -> None:
    async def go() -> BackendStatus:
        b = await started(slurm_settings)
        bid = await b.submit(make_job(slurm_settings, ["sh", "-c", "echo oops >&2; exit 3"]))
        return (await until_ended(b, [bid]))[bid]

    st = run(go())
    assert (st.state, st.exit_code) == (JobState.FAILED, 3)
    assert st.stderr_path is not None and st.stderr_path.read_text() == "oops\n"


def test_one_batched_query_for_many_jobs(slurm_settings: Settings) -> None:
    async def go() -> tuple[int, dict[str, BackendStatus], list[str]]:
        b = await started(slurm_settings)
        ids = [await b.submit(make_job(slurm_settings, ["true"])) for _ in range(5)]
        before = b.table.queries
        got = await b.query([*ids, "99999999"])
        return b.table.queries - before, got, ids

    queries, got, ids = run(go())
    assert queries == 1
    assert set(got) == set(ids)


def test_concurrent_queries_share_one_controller_call(slurm_settings: Settings) -> None:
    async def go() -> int:
        b = await started(slurm_settings)
        before = b.table.queries
        await asyncio.gather(*(b.view(max_age=5.0) for _ in range(50)))
        return b.table.queries - before

    assert run(go()) <= 1


def test_cancel(slurm_settings: Settings) -> None:
    async def go() -> BackendStatus:
        b = await started(slurm_settings)
        bid = await b.submit(make_job(slurm_settings, ["sleep", "300"]))
        for _ in range(100):
            if (await b.query([bid]))[bid].state is JobState.RUNNING:
                break
            await asyncio.sleep(0.1)
        await b.cancel(bid)
        return (await until_ended(b, [bid]))[bid]

    assert run(go()).state is JobState.CANCELLED


def test_out_of_memory_is_its_own_state(slurm_settings: Settings, memory_enforced: None) -> None:
    code = "import time; x = bytearray(600 * 2**20); time.sleep(2)"

    async def go() -> tuple[BackendStatus, str]:
        b = await started(slurm_settings)
        job = make_job(slurm_settings, [sys.executable, "-c", code], memory_bytes=100 * 2**20)
        bid = await b.submit(job)
        st = (await until_ended(b, [bid]))[bid]
        return st, (job.job_dir / "stderr").read_text()

    st, stderr = run(go())
    assert st.state is JobState.OUT_OF_MEMORY, st
    assert "oom-kill" in stderr


def test_typed_gpu_lands_on_that_type(slurm_settings: Settings) -> None:
    async def go() -> dict[str, BackendStatus]:
        b = await started(slurm_settings)
        a = await b.submit(
            make_job(slurm_settings, ["true"], partition="training", gpus=1, gpu_types=("a100",))
        )
        h = await b.submit(
            make_job(slurm_settings, ["true"], partition="training", gpus=2, gpu_types=("h100",))
        )
        got = await until_ended(b, [a, h])
        return {"a100": got[a], "h100": got[h]}

    got = run(go())
    assert got["a100"].node == "a100n1" and got["h100"].node == "h100n1"
    assert all(s.state is JobState.COMPLETED for s in got.values())


def test_lookup_finds_an_attempt_after_a_crash(slurm_settings: Settings) -> None:
    async def go() -> tuple[str, dict[str, str]]:
        b = await started(slurm_settings)
        job = make_job(slurm_settings, ["sleep", "2"])
        bid = await b.submit(job)
        fresh = await started(slurm_settings)  # a new process knows nothing but the key
        found = await fresh.lookup([job.key, "fd-999999.1"])
        st = (await until_ended(fresh, [bid]))[bid]
        assert st.usage is not None and st.usage.cpu_seconds is not None  # job_dir recovered from StdOut
        return bid, {k: v for k, v in found.items()} | {"key": job.key}

    bid, found = run(go())
    assert found[found["key"]] == bid and "fd-999999.1" not in found


def test_inventory_lists_typed_gpus_and_partitions(slurm_settings: Settings) -> None:
    async def go() -> Any:
        return (await started(slurm_settings)).inventory()

    inv = run(go())
    assert {g["type"] for g in inv.gpus} >= {"a100", "h100"}
    assert {p["name"] for p in inv.pools} >= {"hpc", "training", "agent", "test"}


@pytest.mark.slow
def test_walltime_is_timeout(slurm_settings: Settings) -> None:
    async def go() -> BackendStatus:
        b = await started(slurm_settings)
        bid = await b.submit(make_job(slurm_settings, ["sleep", "600"], walltime_seconds=1))
        return (await until_ended(b, [bid], timeout=200))[bid]

    assert run(go()).state is JobState.TIMEOUT


def test_lookup_ignores_another_gateways_attempt_with_the_same_key(
    slurm_settings: Settings, tmp_path: Path
) -> None:
    other = Settings(
        home=tmp_path / "other gw",
        runtime_dir=tmp_path,
        socket=tmp_path / "s.sock",
        backend="slurm",
        sections=slurm_settings.sections,
    )

    async def go() -> tuple[dict[str, str], dict[str, str], str, str]:
        mine, theirs = await started(slurm_settings), await started(other)
        job = make_job(slurm_settings, ["true"])
        their_job = BackendJob(**{**job.__dict__, "job_dir": other.jobs_dir / "x" / "1"})
        their_id = await theirs.submit(their_job)
        my_id = await mine.submit(job)
        return await mine.lookup([job.key]), await theirs.lookup([job.key]), my_id, their_id

    found_mine, found_theirs, my_id, their_id = run(go())
    assert list(found_mine.values()) == [my_id] and list(found_theirs.values()) == [their_id]
