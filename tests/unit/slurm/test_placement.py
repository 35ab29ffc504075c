"""GPU placement on a cluster's inventory (pure): partitions with acceptable GPUs, several types, min_memory."""

from __future__ import annotations

import pytest

from frontdesk.backends.base import Inventory
from frontdesk.backends.slurm.placement import GpuPlacement, NoGpuNode, expand_hostlist, place_gpus

LAB = Inventory(
    cpus=64,
    memory_bytes=0,
    gpus=(
        {"node": "a100n1", "type": "a100", "count": 2},
        {"node": "h100n1", "type": "h100", "count": 2},
        {"node": "l4n1", "type": "l4", "count": 4},
    ),
    pools=(
        {"name": "hpc", "nodes": "cpu[1-2]", "default": True},
        {"name": "training", "nodes": "a100n1,h100n1,l4n1", "default": False},
        {"name": "test", "nodes": "a100n1,cpu[1-2],h100n1", "default": False},
    ),
)
MEMORY = {"a100": 80 * 10**9, "h100": 80 * 10**9, "l4": 24 * 10**9}


def place(types: list[str], min_memory: int | None = None, partition: str | None = None) -> GpuPlacement:
    return place_gpus(LAB, 2, types, min_memory, partition, MEMORY.get)


def test_hostlists() -> None:
    assert expand_hostlist("a100n1,cpu[1-3,05],x[7]y") == ["a100n1", "cpu1", "cpu2", "cpu3", "cpu05", "x7y"]


def test_one_type_goes_to_a_partition_that_has_it() -> None:
    assert place(["h100"]) == GpuPlacement("training", "gpu:h100:2")
    assert place(["H100"], partition="hpc") == GpuPlacement("training", "gpu:h100:2")  # hpc has no GPUs
    assert place(["h100"], partition="test") == GpuPlacement("test", "gpu:h100:2")


def test_several_types_ask_untyped_and_exclude_the_others() -> None:
    assert place(["h100", "a100"]) == GpuPlacement("training", "gpu:2", ("l4n1",))


def test_min_memory_keeps_only_big_enough_models() -> None:
    assert place([], min_memory=40 * 10**9) == GpuPlacement("training", "gpu:2", ("l4n1",))
    assert place([], min_memory=20 * 10**9) == GpuPlacement("training", "gpu:2")
    with pytest.raises(NoGpuNode, match="at least 93 GiB"):
        place([], min_memory=100 * 10**9)
    with pytest.raises(NoGpuNode, match="mi300"):
        place(["mi300"])
