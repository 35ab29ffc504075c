"""Per-pool placement rules, borrowing, drained nodes, and the backfill engine."""

from __future__ import annotations

from frontdesk.policy.backfill import backfill
from frontdesk.policy.config import parse_policy
from frontdesk.policy.model import JobView, NodeView, RunningView, apply
from frontdesk.policy.placement import place
from frontdesk.policy.scheduler import PoolPlacer, plan
from frontdesk.spec.accelerators import GpuNeed

GiB = 1024**3


def gpu_nodes(n: int, pool: str = "training", model: str = "H100", prefix: str = "g") -> list[NodeView]:
    return [NodeView(f"{prefix}{i}", pool, 64, 1024 * GiB, 8, model) for i in range(n)]


def test_whole_node_for_multi_gpu_training() -> None:
    nodes = gpu_nodes(3)
    job = JobView("t", "u", "training", "training", cpus=16, memory_bytes=10 * GiB, gpus=16)
    parts, exclusive = place(job, nodes, "whole_node")  # type: ignore[misc]
    assert exclusive and [p.node for p in parts] == ["g0", "g1"] and all(p.gpus == 8 for p in parts)
    apply({n.name: n for n in nodes}, parts, exclusive)
    assert place(job, nodes, "whole_node") is None  # one idle node left


def test_compact_packing_and_cpu_oversubscription_for_agents() -> None:
    nodes = [NodeView("a", "agent", 8, 64 * GiB), NodeView("b", "agent", 8, 64 * GiB)]
    nodes[1].used_cpus, nodes[1].jobs = 4.0, 1
    job = JobView("1", "u", "agent", "agent", cpus=2, memory_bytes=GiB)
    parts, _ = place(job, nodes, "pack", oversubscribe=4.0)  # type: ignore[misc]
    assert parts[0].node == "b" and parts[0].cpus == 0.5  # the fuller node; 1:4 oversubscription
    big = JobView("2", "u", "agent", "agent", cpus=32, memory_bytes=GiB)
    assert place(big, nodes, "pack", oversubscribe=4.0) is not None
    assert place(big, nodes, "pack", oversubscribe=1.0) is None
    hpc = JobView("3", "u", "hpc", "agent", cpus=8, memory_bytes=GiB)
    assert place(hpc, nodes[1:], "pack", oversubscribe=4.0) is None  # only agent jobs oversubscribe


def test_gpus_and_memory_are_never_oversubscribed() -> None:
    node = NodeView("a", "agent", 64, 16 * GiB, 2, "L40S")
    node.used_gpus, node.jobs = 2, 1
    assert place(JobView("1", "u", "agent", "agent", gpus=1), [node], "pack", 16.0) is None
    node.used_gpus = 0
    assert place(JobView("2", "u", "agent", "agent", memory_bytes=17 * GiB), [node], "pack", 16.0) is None


def test_drained_node_gets_no_new_job() -> None:
    nodes = gpu_nodes(1)
    nodes[0].drained = True
    assert place(JobView("1", "u", "agent", "training", gpus=1), nodes, "pack") is None


def test_eligible_least_scarce_model_is_chosen() -> None:
    cfg = parse_policy({"pools": [{"name": "p", "allocation": "pack"}]})
    nodes = {
        n.name: n
        for n in gpu_nodes(2, "p", "H200", "h2") + gpu_nodes(4, "p", "A100-80G", "a") + gpu_nodes(2, "p", "L40S", "l")
    }
    for n in ("a0", "a1", "a2"):
        nodes[n].used_gpus, nodes[n].jobs = 8, 1
    placer = PoolPlacer(cfg, nodes, hour=12)
    job = JobView("1", "u", "agent", "p", gpus=1, gpu=GpuNeed(min_memory=80 * 1000**3))
    p = placer.place(job, nodes, frozenset())
    assert p is not None and p.parts[0].node.startswith("h2")  # H200 has the larger free share than A100
    fp64 = JobView("2", "u", "agent", "p", gpus=1, gpu=GpuNeed(fp64=True))
    p2 = placer.place(fp64, nodes, frozenset())
    assert p2 is not None and not p2.parts[0].node.startswith("l")


BORROW = {
    "pools": [
        {"name": "agent", "classes": ["agent"]},
        {"name": "training", "classes": ["training"], "allocation": "whole_node"},
    ],
    "borrow": [
        {
            "lender": "agent",
            "borrower": "training",
            "start_hour": 22,
            "end_hour": 6,
            "max_duration": "4h",
            "keep_idle": 1,
        }
    ],
}


def test_borrowing_only_at_night_only_idle_nodes_and_bounded() -> None:
    cfg = parse_policy(BORROW)
    nodes = {n.name: n for n in gpu_nodes(3, "agent", prefix="ag") + gpu_nodes(1, "training", prefix="tr")}
    nodes["tr0"].jobs, nodes["tr0"].exclusive = 1, True
    job = JobView("t", "u", "training", "training", cpus=64, gpus=8, walltime_s=3 * 3600)
    assert PoolPlacer(cfg, nodes, hour=14).place(job, nodes, frozenset()) is None
    p = PoolPlacer(cfg, nodes, hour=23).place(job, nodes, frozenset())
    assert p is not None and p.borrowed_from == "agent" and p.parts[0].node in ("ag1", "ag2")
    long = JobView("l", "u", "training", "training", cpus=64, gpus=8, walltime_s=5 * 3600)
    assert PoolPlacer(cfg, nodes, hour=23).place(long, nodes, frozenset()) is None
    late = JobView("x", "u", "training", "training", cpus=64, gpus=8, walltime_s=3 * 3600)
    assert PoolPlacer(cfg, nodes, hour=4).place(late, nodes, frozenset()) is None  # window closes at 6
    hpc = JobView("h", "u", "hpc", "training", cpus=8)
    assert PoolPlacer(cfg, nodes, hour=23).candidates(hpc) == ["tr0"]


def _flat(nodes: dict[str, NodeView]) -> PoolPlacer:
    return PoolPlacer(parse_policy({"pools": [{"name": "p", "allocation": "spread"}]}), nodes, 12)


def test_fifo_stops_at_the_first_blocked_job_and_easy_backfills_around_it() -> None:
    nodes = {n.name: n for n in [NodeView("n0", "p", 8, 64 * GiB), NodeView("n1", "p", 8, 64 * GiB)]}
    running = [RunningView("r", ((p := _occupy(nodes, "n0", 8)),), expected_end=1000)]
    del p
    big = JobView("big", "u", "hpc", "p", cpus=16, walltime_s=3600, queued_at=0)
    short = JobView("short", "u", "hpc", "p", cpus=4, walltime_s=500, queued_at=1)
    long = JobView("long", "u", "hpc", "p", cpus=4, walltime_s=5000, queued_at=2)
    fifo, _ = backfill([big, short, long], nodes, running, 0, _flat(nodes), None)
    assert fifo == []
    easy, res = backfill([big, short, long], nodes, running, 0, _flat(nodes), lambda j: "all")
    assert [p.job_id for p in easy] == ["short"]  # ends before the shadow time; `long` would delay `big`
    assert res["all"].job_id == "big" and res["all"].shadow == 1000


def _occupy(nodes: dict[str, NodeView], name: str, cpus: int):  # type: ignore[no-untyped-def]
    from frontdesk.policy.model import Part

    part = Part(name, float(cpus), 0, 0)
    apply(nodes, (part,), False)
    return part


def test_plan_orders_by_mlfq_and_keeps_pools_apart() -> None:
    cfg = parse_policy(
        {
            "pools": [
                {"name": "agent", "classes": ["agent"], "cpu_oversubscribe": 2.0},
                {"name": "hpc", "classes": ["hpc"], "allocation": "spread"},
            ]
        }
    )
    nodes = {"a": NodeView("a", "agent", 4, 64 * GiB), "h": NodeView("h", "hpc", 64, 256 * GiB)}
    queue = [
        JobView("hpc1", "u", "hpc", "hpc", cpus=64, queued_at=0),
        JobView("ag1", "u", "agent", "agent", cpus=4, queued_at=5),
        JobView("ag2", "v", "agent", "agent", cpus=4, queued_at=6),
        JobView("ag3", "w", "agent", "agent", cpus=4, queued_at=7),
    ]
    starts, _ = plan(queue, nodes, [], now=10, hour=12, cfg=cfg)
    assert {p.job_id for p in starts} == {"hpc1", "ag1", "ag2"}
    assert all(p.parts[0].node == "a" for p in starts if p.job_id.startswith("ag"))
