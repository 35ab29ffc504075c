"""Simulated clusters (nodes with accelerator models) and frontdesk's default policy for each.

Pools take nodes by name pattern (`[policy] pools.nodes`, shell globs); unmatched nodes join the first pool.
"""

from __future__ import annotations

import fnmatch
from typing import Any

from frontdesk.policy.config import PolicyConfig, parse_policy
from frontdesk.policy.model import NodeView
from frontdesk.sim.swf import Machine

__all__ = ["AGENT_POOL", "agent_nodes", "assign_pools", "build_cluster", "default_policy"]

GiB = 1024**3
_NO_MEMORY_LIMIT = 1 << 60


def _nodes(
    prefix: str, count: int, cpus: int, mem_gib: int, gpus: int = 0, model: str | None = None, start: int = 1
) -> list[NodeView]:
    return [NodeView(f"{prefix}-{i:02d}", "", cpus, mem_gib * GiB, gpus, model) for i in range(start, start + count)]


def build_cluster(name: str, machine: Machine | None = None) -> list[NodeView]:
    """The nodes of a named cluster: `cluster100`, `validation`, or `swf` (exactly `machine`: its processors on
    its nodes, memory not modelled)."""
    if name == "cluster100":
        return (
            _nodes("gpu-l40s", 4, 64, 512, 8, "L40S")
            + _nodes("gpu-a100a", 4, 64, 1024, 8, "A100-80G")
            + _nodes("cpu-a", 2, 128, 512)
            + _nodes("gpu-h100", 32, 64, 1024, 8, "H100")
            + _nodes("gpu-a100", 16, 64, 1024, 8, "A100-80G")
            + _nodes("gpu-h200", 8, 64, 1024, 8, "H200")
            + _nodes("cpu", 34, 128, 512)
        )
    if name == "validation":
        return (
            _nodes("gpu-l40s", 2, 64, 512, 8, "L40S")
            + _nodes("gpu-h100", 8, 64, 1024, 8, "H100")
            + _nodes("cpu", 2, 128, 512)
        )
    if name == "swf":
        m = machine or Machine(128)
        return [NodeView(f"cpu-{i:04d}", "", m.procs // m.nodes, _NO_MEMORY_LIMIT) for i in range(m.nodes)]
    raise ValueError(f"unknown cluster {name!r} (cluster100, validation, swf)")


_GPU_POOLS: dict[str, Any] = {
    "pools": [
        {
            "name": "agent",
            "classes": ["agent", "inference"],
            "allocation": "pack",
            "cpu_oversubscribe": 4.0,
            "nodes": ["gpu-l40s-*", "gpu-a100a-*", "cpu-a-*"],
            "partition": "agent",
            "qos": "interactive",
        },
        {
            "name": "training",
            "classes": ["training"],
            "allocation": "whole_node",
            "nodes": ["gpu-h100-*", "gpu-a100-*", "gpu-h200-*"],
            "partition": "gpu",
            "qos": "normal",
        },
        {
            "name": "hpc",
            "classes": ["hpc"],
            "allocation": "spread",
            "nodes": ["cpu-[0-9]*"],
            "partition": "cpu",
            "qos": "normal",
        },
    ],
    "borrow": [
        {
            "lender": "agent",
            "borrower": "training",
            "start_hour": 22,
            "end_hour": 6,
            "max_duration": "4h",
            "keep_idle": 2,
        }
    ],
    "trial": {"walltime_cap": "10m"},
}


AGENT_POOL = "agents"
"""`--agent-nodes`: the pool (Slurm partition `agent`) of nodes outside the replayed machine that agent work
goes to."""


def agent_nodes(count: int, cores: int) -> list[NodeView]:
    """`count` nodes of `cores` each for agent work, outside the trace's machine (memory not modelled)."""
    return [NodeView(f"agent-{i:03d}", "", cores, _NO_MEMORY_LIMIT) for i in range(count)]


def default_policy(
    cluster: str, machine: Machine | None = None, agent_slice: int = 0, agent_pool: bool = False
) -> PolicyConfig:
    """frontdesk's shipped policy for a simulated cluster; on an SWF machine, `agent_slice` cores kept for
    agent work (0: none), or (`agent_pool`) agent work routed to the `agent-*` nodes outside the machine."""
    raw = dict(_GPU_POOLS)
    if cluster == "swf":
        # The trace's own machine, one pool: no capacity is set aside for agents on a replayed HPC trace
        # (whatever the classifier guesses): batch jobs keep first-come order and the head's reservation counts
        # processors (nodes all alike), so with no agent work frontdesk makes textbook EASY's decisions.
        # While a batch job has waited over an hour, agent work may hold at most 1/32 of the machine (a lane
        # bounded in size): unbounded, prioritised short trials take every hole the large jobs queued behind
        # EASY's head would have started in (docs/policy.md).
        procs = (machine or Machine(128)).procs
        pool = {
            "name": "all",
            "allocation": "spread",
            "nodes": ["*"],
            "agent_max_cores": max(agent_slice, procs // 32, 1),
        }
        if agent_slice:
            pool["agent_cores"] = agent_slice
        # Textbook EASY looks at the whole queue for backfill: so does frontdesk on a replayed trace (a window
        # of 200 jobs made Lublin-1's hpc bsld +52 % once reservations count processors).
        raw = {"pools": [pool], "backfill_depth": 10_000}
        if agent_pool:  # listed first: pool_for("agent") and the agent-* nodes find it before "all"
            agents = {"name": AGENT_POOL, "classes": ["agent"], "allocation": "spread", "nodes": ["agent-*"]}
            raw["pools"] = [{**agents, "partition": "agent"}, pool]
    return parse_policy(raw, f"built-in policy for {cluster}")


def assign_pools(nodes: list[NodeView], cfg: PolicyConfig) -> list[NodeView]:
    """Copies of `nodes` with `pool` set from the policy's name patterns."""
    out = []
    for n in nodes:
        pool = next(
            (p.name for p in cfg.pools if any(fnmatch.fnmatchcase(n.name, pat) for pat in p.nodes)),
            cfg.pools[0].name,
        )
        c = n.copy()
        c.pool = pool
        out.append(c)
    return out
