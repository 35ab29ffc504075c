"""Shared-GPU jobs on Slurm: `--gres=shard:N` (gres/shard, Slurm 22.05+), N from the share or the memory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from frontdesk.backends.base import BackendJob, Inventory
from frontdesk.backends.slurm.placement import GpuPlacement, NoGpuNode, placement_for, shards_per_gpu
from frontdesk.backends.slurm.render import render_script

GiB = 1024**3
LAB = Inventory(
    cpus=64,
    memory_bytes=0,
    gpus=({"node": "a100n1", "type": "a100", "count": 2}, {"node": "h100n1", "type": "h100", "count": 2}),
    pools=(
        {"name": "hpc", "nodes": "cpu[1-2]", "default": True},
        {"name": "training", "nodes": "a100n1,h100n1", "default": False},
    ),
)


def job(**kw: Any) -> BackendJob:
    base: dict[str, Any] = dict(
        job_id=12,
        attempt=1,
        name="infer",
        argv=["python", "serve.py"],
        workdir=Path("/home/ada/proj"),
        env={"FRONTDESK_JOB_ID": "12"},
        job_dir=Path("/srv/frontdesk/jobs/12/1"),
        gpus=1,
    )
    base.update(kw)
    return BackendJob(**base)


def test_a_share_asks_that_many_of_the_gpus_shards() -> None:
    assert placement_for(job(gpu_share=0.25), LAB, None, 8) == GpuPlacement("training", "shard:2")
    assert placement_for(job(gpu_share=0.3), LAB, None, 8) == GpuPlacement("training", "shard:3")  # rounded up
    assert placement_for(job(gpu_share=0.01), LAB, None, 8) == GpuPlacement("training", "shard:1")


def test_memory_is_turned_into_shards_of_the_gpus_memory() -> None:
    # A100 (80G) and H100 (80 GB in the catalog, 80 GiB as nvidia-smi shows): 20 GiB is a quarter, 2 of 8 shards
    assert placement_for(job(gpu_memory_bytes=20 * GiB), LAB, None, 8) == GpuPlacement("training", "shard:2")
    assert placement_for(job(gpu_memory_bytes=21 * GiB), LAB, None, 8) == GpuPlacement("training", "shard:3")
    assert placement_for(job(gpu_memory_bytes=80 * GiB), LAB, None, 8) == GpuPlacement("training", "shard:8")
    # both given: the larger share decides
    assert placement_for(job(gpu_memory_bytes=GiB, gpu_share=0.5), LAB, None, 8).gres == "shard:4"  # type: ignore[union-attr]


def test_shards_are_untyped_so_other_gpu_types_are_excluded() -> None:
    got = placement_for(job(gpu_share=0.5, gpu_types=("h100",)), LAB, None, 8)
    assert got == GpuPlacement("training", "shard:4", ("a100n1",))


@pytest.mark.parametrize(
    ("kw", "shards", "says"),
    [
        ({"gpu_share": 0.5}, 0, "set [slurm] shards_per_gpu"),
        ({"gpu_memory_bytes": 200 * GiB}, 8, "it asks for 200 GiB of GPU memory; these GPUs have"),
        ({"gpu_share": 0.5, "gpu_types": ("b200",)}, 8, "no node of this cluster has GPUs of b200"),
    ],
)
def test_what_cannot_be_placed_says_why(kw: dict[str, Any], shards: int, says: str) -> None:
    with pytest.raises(NoGpuNode) as err:
        placement_for(job(**kw), LAB, None, shards)
    assert says in str(err.value)


def test_shard_sbatch(golden: Any) -> None:
    place = placement_for(job(gpu_memory_bytes=20 * GiB, gpu_types=("a100",)), LAB, None, 8)
    text = render_script(job(gpu_memory_bytes=20 * GiB, gpu_types=("a100",), memory_bytes=8 * GiB), gpu=place)
    golden.check("shard.sbatch", text)


def test_shards_per_gpu_as_the_nodes_declare_them() -> None:
    from frontdesk.backends.slurm.parse import parse_scontrol_records

    text = (
        "NodeName=a100n1 Arch=x86_64 CPUTot=16 Gres=gpu:a100:2,shard:a100:16 State=IDLE\n"
        "NodeName=h100n1 Arch=x86_64 CPUTot=16 Gres=gpu:h100:2(S:0),shard:h100:8(S:0) State=IDLE\n"
        "NodeName=cpu1 Arch=x86_64 CPUTot=8 Gres=(null) State=IDLE\n"
    )
    assert shards_per_gpu(parse_scontrol_records(text, "NodeName")) == 4  # the smallest: 8 shards over 2 GPUs
    assert shards_per_gpu(parse_scontrol_records("NodeName=a Gres=gpu:2\n", "NodeName")) == 0


@pytest.mark.parametrize("value", [-1, 1.5, "8", True])
def test_a_bad_shards_per_gpu_setting_is_refused(value: object) -> None:
    from frontdesk.backends.slurm.config import SlurmConfig
    from frontdesk.config import Settings
    from frontdesk.errors import ConfigError

    with pytest.raises(ConfigError, match="shards_per_gpu"):
        home = Path("/nonexistent")
        SlurmConfig.from_settings(Settings(home, home, home / "s", sections={"slurm": {"shards_per_gpu": value}}))
