"""Which partition would fit, over the lab cluster's real `scontrol -o show node|partition` output (captured
from scripts/slurm-lab): hpc = 2 cpu nodes of 16000 MB, no MaxTime; training = a100/h100 nodes of 32000 MB,
2 days; agent = the cpu nodes, 30 min; test = every node, 1 h."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from frontdesk.backends.slurm.parse import inventory_from_records, parse_scontrol_records
from frontdesk.memory.fit import Need, Shape, advise, shapes

DATA = Path(__file__).with_name("data")
MB = 2**20


def _lab() -> list[Shape]:
    nodes = parse_scontrol_records((DATA / "lab-nodes.txt").read_text(), "NodeName")
    parts = parse_scontrol_records((DATA / "lab-partitions.txt").read_text(), "PartitionName")
    return shapes(inventory_from_records(nodes, parts).pools)


def test_the_lab_partitions_are_read_with_their_largest_node_time_limit_and_gpus() -> None:
    got = {s.name: s for s in _lab()}
    assert got["hpc"] == Shape("hpc", 16000 * MB, None, (), True, True)
    assert got["training"] == Shape("training", 32000 * MB, 2 * 86400.0, ("a100", "h100"), True, False)
    assert got["agent"].max_time_s == 1800.0 and got["agent"].gpu_types == ()
    assert got["test"].max_node_memory_bytes == 32000 * MB and got["test"].gpu_types == ("a100", "h100")


def test_memory_past_the_partitions_nodes_names_the_partitions_with_larger_nodes() -> None:
    text = advise("hpc", Need(memory_bytes=24000 * MB), _lab())
    assert text is not None and text.startswith("partition hpc's nodes have at most 15.6G")
    assert "--partition training" in text and "--partition test" in text and "agent" not in text.split(":", 1)[1]
    assert advise("hpc", Need(memory_bytes=8000 * MB), _lab()) is None  # it fits where it ran


def test_no_partition_fits_says_so() -> None:
    text = advise("training", Need(memory_bytes=64000 * MB), _lab())
    assert text == "partition training's nodes have at most 31.2G and no other partition fits either"


def test_walltime_past_maxtime_and_a_job_without_gpu_and_the_default_partition() -> None:
    text = advise("agent", Need(walltime_s=3600), _lab())
    assert text is not None and text.startswith("partition agent allows at most 30m00s")
    assert "--partition hpc (no limit)" in text and "--partition test (up to 1h00m)" in text
    gpu = advise(None, Need(gpus=True), _lab())  # no partition asked: the default one (hpc) was used
    assert gpu == "partition hpc has no GPU: use --partition training (a100, h100) or --partition test (a100, h100)"
    assert advise("training", Need(gpus=True), _lab()) is None


def test_the_embedded_backend_has_no_partitions_so_no_advice() -> None:
    assert shapes([{"name": "agent", "cpus": 4}]) == []
    assert advise(None, Need(memory_bytes=10**12), []) is None


@given(st.integers(min_value=1, max_value=10**14), st.sampled_from(["hpc", "training", "agent", "test", None]))
def test_every_partition_offered_fits_the_need(memory: int, partition: str | None) -> None:
    lab = {s.name: s for s in _lab()}
    text = advise(partition, Need(memory_bytes=memory), lab.values())
    if text is None or "use " not in text:
        return
    for offer in text.split("use ", 1)[1].split(" or "):
        name = offer.split()[1]
        assert (lab[name].max_node_memory_bytes or 0) >= memory
