"""sbatch scripts: golden files for the shapes the gateway hands over."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from frontdesk.backends.base import BackendJob
from frontdesk.backends.slurm.render import format_time_limit, render_script, sbatch_argv
from frontdesk.errors import SpecError

JOB_DIR = Path("/srv/frontdesk/jobs/12/1")


def job(**kw: object) -> BackendJob:
    base: dict[str, object] = dict(
        job_id=12,
        attempt=1,
        name="train",
        argv=["python", "train.py", "--lr", "0.1"],
        workdir=Path("/home/ada/proj"),
        env={"FRONTDESK_JOB_ID": "12"},
        job_dir=JOB_DIR,
    )
    base.update(kw)
    return BackendJob(**base)  # type: ignore[arg-type]


def test_minimal(golden: Any) -> None:
    golden.check("minimal.sbatch", render_script(job()))


def test_typed_gpus_memory_walltime_partition(golden: Any) -> None:
    text = render_script(
        job(
            cpus=8,
            memory_bytes=64 * 2**30,
            gpus=2,
            gpu_types=("h100", "a100"),
            walltime_seconds=5400,
            partition="training",
            qos="high",
        )
    )
    golden.check("gpu.sbatch", text)


def test_quoting_and_spaces(golden: Any) -> None:
    text = render_script(
        job(
            argv=["sh", "-c", "echo \"$X\" 'it''s' $(date)"],
            workdir=Path("/home/ada/work dir 'quoted'"),
            env={"X": "a b 'c' \"d\" $HOME", "FRONTDESK_JOB_ID": "12"},
            job_dir=Path("/srv/front desk/jobs/12/1 100%"),
        ),
        default_partition="hpc",
        extra_directives=["--account=proj"],
    )
    golden.check("quoting.sbatch", text)


def test_untyped_gpus() -> None:
    assert "#SBATCH --gres=gpu:3\n" in render_script(job(gpus=3))


def test_job_name_is_the_attempt_key() -> None:
    assert "#SBATCH --job-name=fd-12.1\n" in render_script(job())


def test_a_job_dir_slurm_cannot_name_is_refused() -> None:
    with pytest.raises(SpecError):
        render_script(job(job_dir=Path('/srv/a"b')))


def test_bad_env_name_is_refused() -> None:
    with pytest.raises(SpecError):
        render_script(job(env={"A B": "x"}))


@pytest.mark.parametrize(
    ("seconds", "limit"),
    [
        (1, "0-00:01:00"),
        (60, "0-00:01:00"),
        (61, "0-00:02:00"),
        (5400, "0-01:30:00"),
        (86400 * 2 + 1, "2-00:01:00"),
    ],
)
def test_time_limit_rounds_up_to_minutes(seconds: int, limit: str) -> None:
    assert format_time_limit(seconds) == limit


def test_sbatch_argv_is_parsable() -> None:
    assert sbatch_argv(JOB_DIR / "sbatch.sh") == ["sbatch", "--parsable", str(JOB_DIR / "sbatch.sh")]


def test_policy_decisions_reach_slurm_as_qos_and_nice() -> None:
    from frontdesk.policy.priority import slurm_nice

    text = render_script(job(qos="agent-fast", priority=9000))
    assert "#SBATCH --qos=agent-fast\n" in text
    assert f"#SBATCH --nice={slurm_nice(9000)}\n" in text and slurm_nice(9000) == 999
    assert "#SBATCH --nice=-4001\n" in render_script(job(priority=9000), nice_shift=5000)  # above direct jobs
    plain = render_script(job())
    assert "--nice" not in plain and "--qos" not in plain


def test_a_shim_job_keeps_the_users_name_files_and_options(golden: Any) -> None:
    from frontdesk.backends.slurm.render import command_line
    from frontdesk.spec.model import SlurmOptions

    given = SlurmOptions(
        options=["--nodes=2", "--ntasks-per-node=1", "--mem-per-cpu=100"],
        job_name="eval X=1 run",
        output="logs/%x-%j.out",
        export="ALL,EXTRA=a b",
        args=["--lr", "0.1"],
    )
    shim_job = job(argv=[str(JOB_DIR / "script")], memory_bytes=200 * 2**20, cpus=2, extra={"slurm": given})
    argv = sbatch_argv(JOB_DIR / "sbatch.sh", options=command_line(shim_job, "fd-12.1@abc"))
    golden.check("shim.sbatch", render_script(shim_job) + "# argv: " + repr(argv) + "\n")
    assert "--ntasks=1" not in render_script(shim_job) and "--mem=" not in render_script(shim_job)


def test_the_job_environment_is_not_written_into_the_script() -> None:
    text = render_script(job(env={"FRONTDESK_JOB_ID": "12", "MY_TOKEN": "s3cret"}))
    assert "s3cret" not in text and "export FRONTDESK_JOB_ID=12\n" in text
