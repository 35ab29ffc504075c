"""Property: whatever the queue, a scheduling pass never over-allocates GPUs, memory or (scaled) cores."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from frontdesk.policy.config import parse_policy
from frontdesk.policy.model import JobView, NodeView, apply
from frontdesk.policy.scheduler import plan

GiB = 1024**3
CFG = parse_policy(
    {
        "pools": [
            {"name": "agent", "classes": ["agent"], "cpu_oversubscribe": 4.0},
            {"name": "training", "classes": ["training"], "allocation": "whole_node"},
            {"name": "hpc", "classes": ["hpc"], "allocation": "spread"},
        ]
    }
)

jobs = st.lists(
    st.tuples(
        st.sampled_from(["agent", "training", "hpc"]),
        st.integers(1, 128),
        st.integers(0, 16),
        st.integers(0, 300),
        st.integers(60, 20000),
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(jobs)
def test_plan_never_overallocates(specs: list[tuple[str, int, int, int, int]]) -> None:
    nodes = {f"a{i}": NodeView(f"a{i}", "agent", 16, 64 * GiB, 2, "L40S") for i in range(2)}
    nodes |= {f"t{i}": NodeView(f"t{i}", "training", 64, 512 * GiB, 8, "H100") for i in range(3)}
    nodes |= {f"h{i}": NodeView(f"h{i}", "hpc", 64, 256 * GiB) for i in range(2)}
    queue = [
        JobView(str(i), f"u{i % 3}", cls, cls, cpus, mem * GiB, gpus if cls != "hpc" else 0, wall, float(i))
        for i, (cls, cpus, gpus, mem, wall) in enumerate(specs)
    ]
    starts, _ = plan(queue, nodes, [], now=100.0, hour=12, cfg=CFG)
    for p in starts:
        apply(nodes, p.parts, p.exclusive)
        job = next(j for j in queue if j.id == p.job_id)
        got = sum(x.gpus for x in p.parts)
        assert got >= job.gpus if p.exclusive else got == job.gpus  # whole nodes hold all their GPUs
        assert all(nodes[x.node].pool == job.pool for x in p.parts)
    for n in nodes.values():
        assert n.used_gpus <= n.gpus and n.used_memory <= n.memory_bytes and n.used_cpus <= n.cpus + 1e-6
