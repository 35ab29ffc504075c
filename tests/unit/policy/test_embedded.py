"""The embedded backend's picker over the local backend's own QueuedJob and FreeResources."""

from __future__ import annotations

from frontdesk.backends.local import FreeResources, QueuedJob
from frontdesk.policy.config import parse_policy
from frontdesk.policy.embedded import JobMeta, build_nodes, make_picker
from frontdesk.policy.priority import FairshareLedger

GiB = 1024**3


def q(
    bid: str,
    job_id: int,
    cpus: int = 1,
    gpus: int = 0,
    wall: int | None = 600,
    partition: str | None = None,
    cls: str = "agent",
    at: float = 0.0,
) -> QueuedJob:
    return QueuedJob(
        bid,
        job_id,
        cpus,
        GiB,
        gpus,
        (),
        wall,
        0,
        at,
        partition,
        {"class": cls, "principal": "u", "trial": False},
    )


def free(cpus: int, gpus: tuple[int, ...] = (), running: tuple[QueuedJob, ...] = (), total: int = 8) -> FreeResources:
    models = {i: "NVIDIA H100 80GB HBM3" for i in range(2)}
    return FreeResources(cpus, 32 * GiB, gpus, models, running, total, 32 * GiB)


def test_shared_machine_starts_what_fits_in_priority_order() -> None:
    cfg = parse_policy({"easy_head": False})
    meta = {1: JobMeta("hpc", "default", False, "u"), 2: JobMeta("agent", "default", True, "v")}
    pick = make_picker(lambda: cfg, meta, FairshareLedger(), lambda now: 12.0, lambda: False)
    queued = [q("b1", 1, cpus=6, cls="hpc", wall=7200), q("b2", 2, cpus=4, at=5.0)]
    assert pick(queued, free(8, (0, 1)), 10.0) == ["b2"]  # the trial goes first; the hpc job waits for cores
    assert pick(queued, free(12, (0, 1), total=12), 10.0) == ["b2", "b1"]


def test_by_default_a_trial_does_not_take_the_cores_an_older_hpc_job_starts_on() -> None:
    """easy_head (the default): the older hpc job is EASY's head and starts; the trial waits for cores."""
    cfg = parse_policy({})
    meta = {1: JobMeta("hpc", "default", False, "u"), 2: JobMeta("agent", "default", True, "v")}
    pick = make_picker(lambda: cfg, meta, FairshareLedger(), lambda now: 12.0, lambda: False)
    queued = [q("b1", 1, cpus=6, cls="hpc", wall=7200), q("b2", 2, cpus=4, at=5.0)]
    assert pick(queued, free(8, (0, 1)), 10.0) == ["b1"]
    assert pick(queued, free(12, (0, 1), total=12), 10.0) == ["b1", "b2"]


def test_drained_machine_starts_nothing() -> None:
    cfg = parse_policy({})
    pick = make_picker(lambda: cfg, {}, None, lambda now: 12.0, lambda: True)
    assert pick([q("b1", 1)], free(8, (0, 1)), 0.0) == []


def test_pool_slices_of_the_one_machine() -> None:
    cfg = parse_policy(
        {
            "pools": [
                {"name": "agent", "classes": ["agent"], "cpus": 2, "gpus": 0, "partition": "interactive"},
                {
                    "name": "batch",
                    "classes": ["hpc", "training"],
                    "cpus": 6,
                    "gpus": 2,
                    "allocation": "spread",
                },
            ]
        }
    )
    running = (q("r1", 9, cpus=2, partition="interactive"),)
    nodes = build_nodes(cfg, free(6, (0, 1), running), False)
    assert nodes["agent"].free_cpus == 0 and nodes["batch"].free_cpus == 6 and nodes["batch"].gpu_model == "H100"
    meta = {1: JobMeta("agent", "agent", False, "u"), 2: JobMeta("hpc", "batch", False, "u")}
    pick = make_picker(lambda: cfg, meta, None, lambda now: 12.0, lambda: False)
    queued = [
        q("b1", 1, cpus=1, partition="agent"),
        q("b2", 2, cpus=4, cls="hpc", partition="batch", wall=7200),
    ]
    assert pick(queued, free(6, (0, 1), running), 0.0) == ["b2"]  # the agent slice is full


def test_one_pool_s_agent_slice_holds_on_the_shared_machine() -> None:
    """One configured pool with a slice of 2 cores: on 8 free cores the 6-core hpc job starts and leaves 2;
    the next 1-core hpc job would leave 1, so it waits (without the slice both start)."""
    meta = {1: JobMeta("hpc", "default", False, "u"), 2: JobMeta("hpc", "default", False, "u")}
    queued = [q("b1", 1, cpus=6, cls="hpc", wall=7200), q("b2", 2, cpus=1, cls="hpc", at=5.0)]
    for pool, expected in (({}, ["b1", "b2"]), ({"agent_cores": 2}, ["b1"])):
        cfg = parse_policy({"pools": [{"name": "all", **pool}]})
        pick = make_picker(lambda cfg=cfg: cfg, meta, FairshareLedger(), lambda now: 12.0, lambda: False)
        assert pick(queued, free(8, (0, 1)), 10.0) == expected
