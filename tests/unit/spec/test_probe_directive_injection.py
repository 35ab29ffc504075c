"""Spec text that may be written into a batch script's `#SBATCH` lines (read by root's sbatch for a facility
gateway) is refused when it could add a directive or an option: a line break, a space, a comma."""

from __future__ import annotations

from typing import Any

import pytest

from frontdesk.errors import FrontdeskError
from frontdesk.spec.model import validate_spec as parse_spec

HOSTILE = ["a100\n#SBATCH --priority=TOP", "a100\r#SBATCH --uid=0", "a100 --uid=0", "a100,shard:9999", "-x", ""]


def _spec(**resources: Any) -> dict[str, Any]:
    return {"command": ["true"], "resources": {"gpus": 1, **resources}}


@pytest.mark.parametrize("value", HOSTILE)
def test_gpu_model_names_are_one_plain_word(value: str) -> None:
    with pytest.raises(FrontdeskError):
        parse_spec(_spec(gpu={"type": [value]}))
    with pytest.raises(FrontdeskError):
        parse_spec(_spec(gpu={"type": "a100", "interconnect": value}))


@pytest.mark.parametrize("field", ["job_name", "output", "error", "export"])
def test_slurm_options_are_one_line(field: str) -> None:
    with pytest.raises(FrontdeskError):
        parse_spec({"command": ["true"], "slurm": {field: "x\n#SBATCH --priority=TOP"}})


@pytest.mark.parametrize("value", ["a100", "H100-80GB", "nvidia_a100.sxm4", "mi300x"])
def test_real_model_names_pass(value: str) -> None:
    assert parse_spec(_spec(gpu={"type": [value], "interconnect": "nvlink"})).resources.gpu is not None
