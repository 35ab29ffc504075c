"""Job arrays on the Slurm lab: one `sbatch --array` for many tasks, each tracked as `<jobid>_<index>`."""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

import pytest

from backend_helpers import make_job, run, started, until_ended
from frontdesk.backends.base import BackendJob, BackendStatus, JobState
from frontdesk.config import Settings

pytestmark = pytest.mark.slurm


def tasks(settings: Settings, code: str, indices: list[int], **kw: Any) -> list[BackendJob]:
    """Tasks that differ in command (their index as an argument) and environment (SEED)."""
    out = []
    for i in indices:
        job = make_job(settings, [sys.executable, "-c", code, str(i)], **kw)
        env = {**job.env, "SEED": str(i * 7), "FRONTDESK_ARRAY_TASK_ID": str(i), "SLURM_ARRAY_TASK_ID": str(i)}
        out.append(dataclasses.replace(job, env=env, array_id=1000, array_index=i))
    return out


def test_one_sbatch_runs_every_task_with_its_own_command_env_output_and_usage(slurm_settings: Settings) -> None:
    code = (
        "import os,sys; x=bytearray(32*2**20); i=sys.argv[1]; "
        "print('task', i, os.environ['SEED'], os.environ['GREETING'], os.environ['SLURM_ARRAY_TASK_ID']); "
        "sys.exit(3 if i == '2' else 0)"
    )

    async def go() -> tuple[list[BackendJob], list[str], dict[str, BackendStatus], int]:
        b = await started(slurm_settings)
        jobs = tasks(slurm_settings, code, [0, 1, 2, 5], memory_bytes=256 * 2**20)
        before = b.runner.calls["sbatch"]
        ids = await b.submit_array(jobs, 2)
        calls = b.runner.calls["sbatch"] - before
        return jobs, ids, await until_ended(b, ids), calls

    jobs, ids, got, sbatch_calls = run(go())
    assert sbatch_calls == 1
    array = ids[0].split("_")[0]
    assert ids == [f"{array}_{i}" for i in (0, 1, 2, 5)]
    for job, bid in zip(jobs, ids, strict=True):
        st = got[bid]
        i = job.array_index
        assert st.backend_id == bid
        assert st.state is (JobState.FAILED if i == 2 else JobState.COMPLETED), st
        assert st.exit_code == (3 if i == 2 else 0)
        assert st.stdout_path == job.job_dir / "stdout"
        assert st.stdout_path.read_text() == f'task {i} {i * 7} it\'s "quoted" $HOME {i}\n'
        assert st.usage is not None and st.usage.cpu_seconds is not None
    script = (jobs[0].job_dir / "array" / "sbatch.sh").read_text()
    assert script.count("#SBATCH --mem=256M") == 1 and "export SEED=35" in script


def test_cancel_one_task_then_the_whole_array(slurm_settings: Settings) -> None:
    async def go() -> tuple[list[str], dict[str, BackendStatus], dict[str, BackendStatus]]:
        b = await started(slurm_settings)
        ids = await b.submit_array(tasks(slurm_settings, "import time; time.sleep(300)", list(range(6))), 1)
        running = await b.query(ids)
        await b.cancel(ids[3])  # pending behind %1: Slurm forgets it at once
        await b.cancel(ids[0].split("_")[0])  # the whole array
        ended = await until_ended(b, ids)
        return ids, running, ended

    ids, running, ended = run(go())
    assert {st.state for st in running.values()} <= {JobState.PENDING, JobState.RUNNING}
    assert all(running[i].backend_id == i for i in ids)
    assert all(st.state is JobState.CANCELLED for st in ended.values()), ended


def test_a_restarted_gateway_finds_every_task_by_its_key(slurm_settings: Settings) -> None:
    async def go() -> tuple[list[BackendJob], list[str], dict[str, str]]:
        b = await started(slurm_settings)
        jobs = tasks(slurm_settings, "import time; time.sleep(300)", [0, 4, 9])
        ids = await b.submit_array(jobs, None)
        fresh = await started(slurm_settings)  # knows nothing but the controller and its home
        found = await fresh.lookup([j.key for j in jobs] + ["fd-999999.1"])
        await b.cancel(ids[0].split("_")[0])
        await until_ended(b, ids)
        return jobs, ids, found

    jobs, ids, found = run(go())
    assert found == {job.key: bid for job, bid in zip(jobs, ids, strict=True)}


def test_tasks_that_ask_different_resources_are_refused_before_sbatch(slurm_settings: Settings) -> None:
    from frontdesk.errors import BackendError

    async def go() -> int:
        b = await started(slurm_settings)
        jobs = tasks(slurm_settings, "pass", [0, 1])
        jobs[1] = dataclasses.replace(jobs[1], cpus=2)
        before = b.runner.calls["sbatch"]
        with pytest.raises(BackendError, match="same resources"):
            await b.submit_array(jobs, None)
        return b.runner.calls["sbatch"] - before

    assert run(go()) == 0
