"""SlurmBackend parts that need no cluster: settings validation and the forgotten-job fallback."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from frontdesk.backends.base import JobState
from frontdesk.backends.slurm.backend import SlurmBackend, SlurmConfig
from frontdesk.config import Settings
from frontdesk.errors import ConfigError


def settings(home: Path, **slurm: object) -> Settings:
    return Settings(
        home=home, runtime_dir=home, socket=home / "gw.sock", backend="slurm", sections={"slurm": dict(slurm)}
    )


def test_config_is_validated(tmp_path: Path) -> None:
    cfg = SlurmConfig.from_settings(settings(tmp_path, partition="hpc", directives=["--account=p"]))
    assert cfg.partition == "hpc" and cfg.directives == ("--account=p",)
    with pytest.raises(ConfigError):
        SlurmConfig.from_settings(settings(tmp_path, partiton="hpc"))
    with pytest.raises(ConfigError):
        SlurmConfig.from_settings(settings(tmp_path, directives="--account=p"))


def test_a_job_the_controller_forgot_is_answered_from_its_usage_file(tmp_path: Path) -> None:
    home = tmp_path / "home dir"
    job_dir = home / "jobs" / "3" / "1"
    job_dir.mkdir(parents=True)
    (job_dir / "slurm-usage.txt").write_text("rc=2\nended=1796210145\ntimes:\n0m0.0s 0m0.0s\n0m1.5s 0m0.5s\n")
    first = SlurmBackend(settings(home))
    first._remember("4242", job_dir)
    restarted = SlurmBackend(settings(home))  # knows nothing in memory
    got = restarted._from_usage_files(["4242", "4243"])
    assert list(got) == ["4242"]
    st = got["4242"]
    assert (st.state, st.exit_code, st.ended_at) == (JobState.FAILED, 2, 1796210145.0)
    assert st.usage is not None and st.usage.cpu_seconds == 2.0 and st.stdout_path == job_dir / "stdout"


def test_query_of_nothing_asks_nothing(tmp_path: Path) -> None:
    backend = SlurmBackend(settings(tmp_path, bin_dir=str(tmp_path / "no-slurm-here")))
    assert asyncio.run(backend.query([])) == {}
    assert backend.table.queries == 0
