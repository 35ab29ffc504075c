"""SlurmBackend beyond the shared contract (tests/contract): one controller query, typed GPUs, provenance."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from backend_helpers import make_job, run, started, until_ended
from frontdesk.backends.base import BackendJob, BackendStatus, JobState
from frontdesk.config import Settings

pytestmark = pytest.mark.slurm


def test_submit_runs_and_reports_usage_and_output(slurm_settings: Settings, tmp_path: Path) -> None:
    work = tmp_path / "work dir 'q'"
    work.mkdir()
    code = "import os,sys; x=bytearray(64*2**20); sum(range(2*10**6)); print(os.getcwd(), os.environ['GREETING'])"

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
        a = await b.submit(make_job(slurm_settings, ["true"], partition="training", gpus=1, gpu_types=("a100",)))
        h = await b.submit(make_job(slurm_settings, ["true"], partition="training", gpus=2, gpu_types=("h100",)))
        got = await until_ended(b, [a, h])
        return {"a100": got[a], "h100": got[h]}

    got = run(go())
    assert got["a100"].node == "a100n1" and got["h100"].node == "h100n1"
    assert all(s.state is JobState.COMPLETED for s in got.values())


def test_inventory_lists_typed_gpus_and_partitions(slurm_settings: Settings) -> None:
    async def go() -> Any:
        return (await started(slurm_settings)).inventory()

    inv = run(go())
    assert {g["type"] for g in inv.gpus} >= {"a100", "h100"}
    assert {p["name"] for p in inv.pools} >= {"hpc", "training", "agent", "test"}


def test_lookup_ignores_another_gateways_attempt_with_the_same_key(slurm_settings: Settings, tmp_path: Path) -> None:
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


def test_a_site_time_format_does_not_corrupt_times(slurm_settings: Settings, monkeypatch: Any) -> None:
    import time

    monkeypatch.setenv("SLURM_TIME_FORMAT", "relative")  # "Tomorr 08:00"-style text in every time field

    async def go() -> BackendStatus:
        b = await started(slurm_settings)
        bid = await b.submit(make_job(slurm_settings, ["true"]))
        return (await until_ended(b, [bid]))[bid]

    before = time.time()
    st = run(go())
    assert st.submitted_at is not None and st.ended_at is not None
    assert before - 5 <= st.submitted_at <= st.ended_at <= time.time() + 5


TEST_USER = "fdslurm1"


@pytest.fixture(scope="module")
def slurm_user() -> tuple[int, int]:
    """A Unix user (tests/unix_users.py) that a root gateway submits Slurm jobs for."""
    from unix_users import ensure_user

    pw = ensure_user(TEST_USER)
    return pw.pw_uid, pw.pw_gid


def test_a_root_gateway_runs_slurm_jobs_as_their_submitter(
    slurm_settings: Settings, slurm_user: tuple[int, int], tmp_path: Path
) -> None:
    import os

    from frontdesk.spec.model import SlurmOptions

    if os.geteuid() != 0:
        pytest.skip("needs a root gateway")
    import tempfile

    uid, gid = slurm_user
    work = Path(tempfile.mkdtemp(prefix="fd user work ", dir="/tmp"))  # pytest's tmp is root's 0700
    os.chown(work, uid, gid)
    script = "#!/usr/bin/env python3\nimport os, sys\nprint('uid', os.getuid(), sys.argv[1:])\n"

    async def go() -> tuple[BackendJob, BackendJob, dict[str, BackendStatus]]:
        b = await started(slurm_settings)
        cmd = make_job(slurm_settings, ["id", "-u"], workdir=work, uid=uid)
        copy = str(slurm_settings.jobs_dir / "script")
        shim = make_job(
            slurm_settings,
            [copy],
            workdir=work,
            uid=uid,
            script_text=script,
            extra={"slurm": SlurmOptions(job_name="as user", output="mine-%j.txt", args=["a b"])},
        )
        shim = BackendJob(**{**shim.__dict__, "argv": [str(shim.job_dir / "script")]})
        ids = [await b.submit(cmd), await b.submit(shim)]
        return cmd, shim, await until_ended(b, ids)

    cmd, shim, statuses = run(go())
    assert all(st.state is JobState.COMPLETED for st in statuses.values()), statuses
    assert (work / f"{cmd.key}.out").read_text() == f"{uid}\n"
    shim_id = [bid for bid, st in statuses.items() if st.stdout_path and "mine-" in str(st.stdout_path)][0]
    assert (work / f"mine-{shim_id}.txt").read_text() == f"uid {uid} ['a b']\n"
    import shutil

    shutil.rmtree(work)
