"""`[slurm]` numbers are range-checked and its flags and paths typed: `refresh_seconds = nan` made every view a
controller query, `command_timeout = 0` timed every Slurm command out, `accounting = "no"` read as true (a
non-empty string) and a directive holding a newline added a second #SBATCH line."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from frontdesk.backends.slurm.config import SlurmConfig
from frontdesk.errors import ConfigError


def _settings(section: dict[str, Any]) -> Any:
    return SimpleNamespace(section=lambda name: section if name == "slurm" else {})


@pytest.mark.parametrize(
    "section",
    [
        {"refresh_seconds": float("nan")},
        {"refresh_seconds": 0},
        {"refresh_seconds": -1},
        {"refresh_seconds": float("inf")},
        {"refresh_seconds": True},
        {"command_timeout": 0},
        {"command_timeout": float("nan")},
        {"accounting": "no"},
        {"view_files": 0},
        {"partition": ["hpc"]},
        {"conf": "/etc/slurm.conf\n"},
        {"directives": ["--account=a\n#SBATCH --qos=top"]},
    ],
    ids=repr,
)
def test_a_bad_slurm_setting_is_refused(section: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match=r"^\[slurm\]"):
        SlurmConfig.from_settings(_settings(section))


def test_good_ones_still_load() -> None:
    cfg = SlurmConfig.from_settings(
        _settings({"refresh_seconds": 1, "command_timeout": 20, "accounting": False, "directives": ["--account=a"]})
    )
    assert (cfg.refresh_seconds, cfg.command_timeout, cfg.accounting, cfg.directives) == (
        1,
        20,
        False,
        ("--account=a",),
    )
