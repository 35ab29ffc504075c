"""The shape index answers exactly what the node scan answers: placements of cores-only jobs, the index itself
after any starts and ends, and whole simulations (indexed against `simulate(..., indexed=False)`, the scan)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from frontdesk.policy.model import JobView, NodeView, Part
from frontdesk.policy.placement import place
from frontdesk.policy.shapes import MISS, IndexedNodes, place_cores
from frontdesk.sim.cluster import assign_pools, build_cluster, default_policy
from frontdesk.sim.compare import make_policy
from frontdesk.sim.engine import simulate
from frontdesk.sim.overlay import overlay_agents
from frontdesk.sim.swf import Machine
from frontdesk.sim.workload import AgentMix, SimJob, Workload, agent_day

node_st = st.tuples(
    st.sampled_from(["a", "b"]),  # pool
    st.sampled_from([1, 4, 8]),  # cores
    st.sampled_from([0, 0, 2]),  # GPUs
    st.sampled_from([0.0, 0.25, 1.0, 2.0, 3.5, 8.0]),  # used cores (capped at the node's)
    st.sampled_from([0, 0, 0, 1, 2]),  # 1: held exclusively, 2: drained
)


def make_nodes(specs: list[tuple[str, int, int, float, int]]) -> dict[str, NodeView]:
    out = {}
    for i, (pool, cpus, gpus, used, state) in enumerate(specs):
        used = min(used, float(cpus))
        n = NodeView(f"n{i:02d}", pool, cpus, 1 << 40, gpus, "L40S" if gpus else None, used, 0, 0, 1 if used else 0)
        n.exclusive, n.drained = state == 1, state == 2
        out[n.name] = n
    return out


@settings(max_examples=300, deadline=None)
@given(
    st.lists(node_st, min_size=1, max_size=14),
    st.integers(1, 40),
    st.sampled_from([0, 0, 1, 2, 3]),
    st.sampled_from(["hpc", "agent"]),
    st.sampled_from(["spread", "pack"]),
    st.sampled_from([1.0, 4.0]),
    st.sets(st.integers(0, 13), max_size=5),
    st.sampled_from([("a",), ("b",), ("a", "b")]),
)
def test_place_cores_is_the_scan(
    specs: list[tuple[str, int, int, float, int]],
    cpus: int,
    count: int,
    cls: str,
    allocation: str,
    ratio: float,
    excluded: set[int],
    pools: tuple[str, ...],
) -> None:
    nodes = make_nodes(specs)
    job = JobView("j", "u", cls, pools[0], cpus, nodes=count)
    exclude = frozenset(f"n{i:02d}" for i in excluded)
    got = place_cores(job, IndexedNodes(nodes), pools, exclude, allocation, ratio)
    scan = [n for n in nodes.values() if n.pool in pools and n.name not in exclude]
    want = place(job, scan, allocation, ratio)
    if got is not MISS:
        assert got == want


@settings(max_examples=100, deadline=None)
@given(
    st.lists(node_st, min_size=1, max_size=10),
    st.lists(st.tuples(st.integers(0, 9), st.sampled_from([0.25, 1.0, 2.0]), st.booleans()), max_size=30),
)
def test_the_index_follows_starts_and_ends(
    specs: list[tuple[str, int, int, float, int]], moves: list[tuple[int, float, bool]]
) -> None:
    nodes = IndexedNodes(make_nodes(specs))
    held: list[tuple[Part, bool]] = []
    for k, cores, exclusive in moves:
        name = f"n{k % len(specs):02d}"
        if held and k % 3 == 0:  # an end
            part, excl = held.pop(k % len(held))
            nodes.apply((part,), excl, -1)
        else:
            part = Part(name, cores, 0, 0)
            nodes.apply((part,), exclusive, 1)
            held.append((part, exclusive))
        fresh = IndexedNodes(dict(nodes))
        assert nodes.odd == fresh.odd
        assert {p: b for p, b in nodes._buckets.items() if b} == fresh._buckets
        assert nodes.totals == fresh.totals


swf_jobs = st.lists(
    st.tuples(st.floats(0, 500), st.sampled_from([1, 1, 2, 3, 4, 8, 16]), st.floats(1, 400), st.floats(1, 3)),
    min_size=1,
    max_size=60,
)


def records(wl: Workload, spec: str, indexed: bool) -> list[tuple[str, float | None, float | None, int]]:
    pol = make_policy(spec, wl)
    cfg = getattr(pol, "cfg", None) or default_policy(wl.cluster, wl.machine)
    res = simulate(wl, assign_pools(build_cluster(wl.cluster, wl.machine), cfg), pol, indexed=indexed)
    return sorted((r.job.id, r.start, r.end, r.preempted) for r in res.records)


@settings(max_examples=40, deadline=None)
@given(swf_jobs, st.sampled_from([(16, 16), (16, 4), (24, 3)]), st.booleans())
def test_a_simulation_with_the_index_decides_as_the_scan(
    jobs: list[tuple[float, int, float, float]], machine: tuple[int, int], agents: bool
) -> None:
    procs, count = machine
    sims = [
        SimJob(f"j{k}", submit, run, run * over, min(p, procs), f"u{k % 3}")
        for k, (submit, p, run, over) in enumerate(sorted(jobs))
    ]
    wl = Workload("h", sims, 0.0, None, "swf", Machine(procs, count))
    if agents:
        wl = overlay_agents(wl)
    for spec in ("fifo", "easy", "frontdesk"):
        assert records(wl, spec, True) == records(wl, spec, False), spec


def test_an_agent_day_on_the_gpu_cluster_decides_as_the_scan() -> None:
    wl = agent_day(AgentMix(hours=1.0), 3)
    for spec in ("easy", "frontdesk"):
        assert records(wl, spec, True) == records(wl, spec, False), spec


alike_st = st.tuples(st.just("a"), st.sampled_from([1, 1, 4]), st.just(0), st.sampled_from([0.0, 1.0]), st.just(0))


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.one_of(alike_st, node_st), min_size=2, max_size=12),
    st.lists(st.tuples(st.sets(st.integers(0, 11), min_size=2, max_size=8), st.sampled_from([0.25, 1.0])), max_size=12),
)
def test_a_wide_start_or_end_files_its_nodes_as_one_node_at_a_time_would(
    specs: list[tuple[str, int, int, float, int]], moves: list[tuple[set[int], float]]
) -> None:
    """`apply` of many parts files them per shape at once (`_refile_all`); the index, its names in order and a
    planning copy's own index must read as if each node were re-filed alone."""
    nodes = IndexedNodes(make_nodes(specs))
    for pool, by_shape in list(nodes._buckets.items()):
        for shape in list(by_shape):
            nodes.ordered(pool, shape)  # names in order exist before the moves: they must follow them
    held: list[tuple[Part, ...]] = []
    for k, (picked, cores) in enumerate(moves):
        copy = nodes.planning_copy()
        before = {p: {s: set(n) for s, n in b.items()} for p, b in copy._buckets.items()}
        if held and k % 3 == 2:
            nodes.apply(held.pop(len(picked) % len(held)), False, -1)
        else:
            parts = tuple(Part(f"n{i % len(specs):02d}", cores, 0, 0) for i in sorted(picked))
            parts = tuple({x.node: x for x in parts}.values())
            nodes.apply(parts, False, 1)
            held.append(parts)
        fresh = IndexedNodes(dict(nodes))
        assert nodes.odd == fresh.odd
        assert {p: b for p, b in nodes._buckets.items() if b} == fresh._buckets
        assert nodes.totals == fresh.totals
        for (pool, shape), names in nodes._sorted.items():
            assert names == sorted(nodes._buckets[pool][shape])
        assert {p: {s: set(n) for s, n in b.items()} for p, b in copy._buckets.items()} == before
