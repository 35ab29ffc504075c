"""The export file a root gateway hands sbatch instead of the submitter's environment."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from frontdesk.backends.slurm.exportfile import hand_over, sbatch_env
from frontdesk.errors import BackendError

ENV = {"LD_PRELOAD": "/home/u/x.so", "PATH": "/home/u/bin:/usr/bin", "A": "1 2,3", "SLURM_CONF": "/etc/s.conf"}


def _read(path: Path) -> dict[str, str]:
    return dict(item.split("=", 1) for item in path.read_text().split("\0") if item)


@pytest.mark.parametrize("export", [None, "ALL", "ALL,X=1", "NONE"])
def test_all_the_environment_goes_in_the_file_and_none_in_sbatchs(tmp_path: Path, export: str | None) -> None:
    path = tmp_path / "job.env"
    env, opts = hand_over(ENV, export, path)
    assert _read(path) == ENV and opts == [f"--export-file={path}"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert env == sbatch_env("/etc/s.conf") and "LD_PRELOAD" not in env
    assert env["PATH"] == (os.environ.get("PATH") or "/usr/bin:/bin")


def test_a_name_list_keeps_only_those_names(tmp_path: Path) -> None:
    path = tmp_path / "job.env"
    hand_over(ENV, "A,LD_PRELOAD,B=2", path)
    assert _read(path) == {"A": "1 2,3", "LD_PRELOAD": "/home/u/x.so"}


def test_a_symlink_in_its_place_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("untouched")
    (tmp_path / "job.env").symlink_to(target)
    with pytest.raises(OSError):
        hand_over(ENV, None, tmp_path / "job.env")
    assert target.read_text() == "untouched"


def test_a_name_that_is_no_variable_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BackendError):
        hand_over({"A=B": "x"}, None, tmp_path / "job.env")
