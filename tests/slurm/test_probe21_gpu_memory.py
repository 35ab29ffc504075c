"""Probe 21: GPU memory on Slurm is counted as the spec counts it (`20G` is 20 GiB, an 80 GB GPU has 80 GiB).

Before: the catalog held "80 GB" as 80e9 bytes, so on the lab `gpu: {memory: 20G}` took 3 of 8 shards (a
quarter of an A100-80G took more than a quarter), `gpu: {memory: 80G}` was refused ("these GPUs have 74.5058
GiB") although `nvidia-smi` shows such a GPU as 81920 MiB, and `min_memory: 80G` excluded every 80 GB model.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slurm


@pytest.fixture
def shard_gateway(slurm_lab: Path, gateway_factory: Any) -> Any:
    config = '[gateway]\nbackend = "slurm"\ntick_seconds = 1.0\nplugins = ["slurm"]\n\n[slurm]\nrefresh_seconds = 1.0\n'
    return gateway_factory(config=config, env={"SLURM_CONF": str(slurm_lab / "etc" / "slurm.conf")})


def test_gpu_memory_is_counted_in_gib_on_slurm(shard_gateway: Any, workdir: Path) -> None:
    gw = shard_gateway
    cases = {
        "quarter": {"gpu": {"memory": "20G", "type": "a100"}, "memory": "100M", "walltime": "2m"},
        "all": {"gpu": {"memory": "80G", "type": "a100"}, "memory": "100M", "walltime": "2m"},
        "whole": {"gpus": 1, "gpu": {"min_memory": "80G", "type": "a100"}, "memory": "100M", "walltime": "2m"},
    }
    ids = {}
    for name, resources in cases.items():
        out = shlex.quote(str(workdir / f"{name}.env"))
        command = ["/bin/sh", "-c", f'echo "shards=${{SLURM_SHARDS_ON_NODE:-none}}" > {out}']
        ids[name] = int(
            gw.client.submit(spec={"command": command, "workdir": str(workdir), "resources": resources})["id"]
        )
    reports = gw.client.wait(list(ids.values()), "all", 180)
    assert reports["done"], reports
    assert {r["state"] for r in reports["reports"]} == {"COMPLETED"}, [gw.client.job(i)["reason"] for i in ids.values()]
    assert (workdir / "quarter.env").read_text() == "shards=2\n"  # a quarter of 8 shards, not 3
    assert (workdir / "all.env").read_text() == "shards=8\n"
    assert (workdir / "whole.env").read_text() == "shards=none\n"
