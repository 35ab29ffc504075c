"""In a pool shared by agent work and hpc jobs, agent work only backfills around EASY's head (hand-checked),
and no pass ever places a job that delays the pool's reservation (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from frontdesk.policy.config import parse_policy
from frontdesk.policy.model import JobView, NodeView, Part, RunningView, apply
from frontdesk.policy.scheduler import plan

SHARED = parse_policy({"pools": [{"name": "all", "allocation": "spread"}]})
"""One pool over the whole machine that takes every class (frontdesk's policy on an SWF trace)."""


def one_core_nodes(n: int, busy: int, until: float) -> tuple[dict[str, NodeView], list[RunningView]]:
    """`n` one-core nodes; the first `busy` run one hpc job until `until`."""
    nodes = {f"n{i}": NodeView(f"n{i}", "all", 1, 0) for i in range(n)}
    parts = tuple(Part(f"n{i}", 1.0, 0, 0) for i in range(busy))
    apply(nodes, parts, False)
    return nodes, ([RunningView("R", parts, until, False, "hpc")] if busy else [])


def hpc(job_id: str, cpus: int, wall: float, at: float) -> JobView:
    return JobView(job_id, "phys", "hpc", "all", cpus, 0, 0, wall, at)


def trial(job_id: str, wall: float, at: float) -> JobView:
    return JobView(job_id, "agent01", "agent", "all", 1, 0, 0, wall, at, trial=True)


def started(queue: list[JobView], nodes: dict[str, NodeView], running: list[RunningView]) -> set[str]:
    return {p.job_id for p in plan(queue, nodes, running, now=10.0, hour=12, cfg=SHARED)[0]}


def test_a_trial_that_would_delay_the_waiting_hpc_job_stays_queued() -> None:
    """4 one-core nodes, 3 busy until 100. H (4 cores) waits since 0: its reservation is all 4 nodes at 100.
    T (a trial, 10 min) arrived at 5: it ranks above H in the MLFQ, but starting it on the free node would
    hold that node until 610 and delay H by 510 s. It waits; H keeps its reservation."""
    nodes, running = one_core_nodes(4, 3, 100.0)
    queue = [hpc("H", 4, 3600, 0.0), trial("T", 600, 5.0)]
    starts, res = plan(queue, nodes, running, now=10.0, hour=12, cfg=SHARED)
    assert starts == []
    assert res["all"].job_id == "H" and res["all"].shadow == 100.0


def test_a_trial_that_ends_before_the_reservation_is_backfilled() -> None:
    """Same, but the trial asks 60 s: it ends at 70 < 100 and starts at once."""
    nodes, running = one_core_nodes(4, 3, 100.0)
    assert started([hpc("H", 4, 3600, 0.0), trial("T", 60, 5.0)], nodes, running) == {"T"}


def test_agent_work_goes_before_later_hpc_jobs_that_fit() -> None:
    """2 free nodes of 4. H (4 cores) is the head and blocked; K (hpc, 1 core, 60 s) and T (trial, 60 s) both
    end before 100 and fit; T ranks first (agent work enters the MLFQ high), so with one node left after H's
    ... both fit: both start. With only one free node, T gets it, K waits."""
    nodes, running = one_core_nodes(4, 3, 100.0)
    queue = [hpc("H", 4, 3600, 0.0), hpc("K", 1, 60, 1.0), trial("T", 60, 5.0)]
    assert started(queue, nodes, running) == {"T"}


def test_an_older_trial_is_the_head_itself() -> None:
    """When the trial is the oldest queued job it is EASY's head: it starts on the free node although the
    hpc job behind it needs all four."""
    nodes, running = one_core_nodes(4, 3, 100.0)
    assert started([trial("T", 600, 0.0), hpc("H", 4, 3600, 5.0)], nodes, running) == {"T"}


def test_without_agent_work_in_the_pool_the_rule_is_off_for_split_pools() -> None:
    """Pools that take only agent work (or none) keep the MLFQ order alone: an agent job blocked there still
    gets its pool's reservation."""
    cfg = parse_policy(
        {
            "pools": [
                {"name": "agent", "classes": ["agent"]},
                {"name": "hpc", "classes": ["hpc"], "allocation": "spread"},
            ]
        }
    )
    nodes = {"a0": NodeView("a0", "agent", 2, 0)}
    apply(nodes, (Part("a0", 2.0, 0, 0),), False)
    running = [RunningView("R", (Part("a0", 2.0, 0, 0),), 50.0, False, "agent")]
    queue = [JobView("A", "agent01", "agent", "agent", 2, 0, 0, 60, 0.0, trial=True)]
    _, res = plan(queue, nodes, running, now=10.0, hour=12, cfg=cfg)
    assert res["agent"].job_id == "A"


def test_on_nodes_all_alike_the_reservation_counts_processors() -> None:
    """Three 2-core nodes; R holds 3 cores (n0, and one of n1's) until 100. H (hpc, 5 cores) waits since 0:
    at 100 all 6 cores are free, so 1 is extra. K (hpc, 1 core, 1 000 s) ends long after 100 and runs on the
    extra core, wherever it lands; L (hpc, 2 cores, 1 000 s) would take 2 > 1 and waits. (A reservation of
    named nodes held all three nodes, H's 5 cores being spread over them, and K waited too.)"""
    nodes = {f"n{i}": NodeView(f"n{i}", "all", 2, 0) for i in range(3)}
    parts = (Part("n0", 2.0, 0, 0), Part("n1", 1.0, 0, 0))
    apply(nodes, parts, False)
    running = [RunningView("R", parts, 100.0, False, "hpc")]
    queue = [hpc("H", 5, 3600, 0.0), hpc("K", 1, 1000, 1.0), hpc("L", 2, 1000, 2.0)]
    starts, res = plan(queue, nodes, running, now=10.0, hour=12, cfg=SHARED)
    assert [p.job_id for p in starts] == ["K"]
    assert res["all"].job_id == "H" and res["all"].shadow == 100.0 and res["all"].extra == 1.0


def test_on_nodes_that_differ_the_reservation_holds_named_nodes() -> None:
    """A 2-core and a 4-core node (sizes differ): R holds the 4-core node's 4 cores until 100. H (5 cores)
    reserves both nodes at 100 by name (extra None); K (1 core, 1 000 s) fits on the free 2-core node but
    that node is H's: it waits, though 1 core will be left over at 100."""
    nodes = {"a": NodeView("a", "all", 2, 0), "b": NodeView("b", "all", 4, 0)}
    parts = (Part("b", 4.0, 0, 0),)
    apply(nodes, parts, False)
    running = [RunningView("R", parts, 100.0, False, "hpc")]
    starts, res = plan([hpc("H", 5, 3600, 0.0), hpc("K", 1, 1000, 1.0)], nodes, running, 10.0, 12, SHARED)
    assert starts == []
    assert res["all"].extra is None and res["all"].nodes == {"a", "b"}


def test_batch_jobs_backfill_first_come_and_trials_before_them() -> None:
    """Four 1-core nodes, 2 busy until 100; H (4 cores) waits since 0, so no job ending after 100 may start.
    Behind it: A (hpc, 1 core, 60 s, queued at 1), B (an agent-shaped job, not a trial, 60 s, queued at 2),
    T (a trial, 60 s, queued at 3). The trial backfills first (agent work ranks above batch jobs); then the
    older batch job A takes the last free node: batch jobs keep first-come order (B's class would enter the
    MLFQ higher, but in a pool shared with agent work only granted trials jump the queue)."""
    nodes, running = one_core_nodes(4, 2, 100.0)
    b = JobView("B", "phys", "agent", "all", 1, 0, 0, 60, 2.0)
    assert started([hpc("H", 4, 3600, 0.0), hpc("A", 1, 60, 1.0), b, trial("T", 60, 3.0)], nodes, running) == {
        "T",
        "A",
    }


queues = st.lists(
    st.tuples(st.booleans(), st.integers(1, 6), st.integers(1, 40).map(lambda m: 60.0 * m), st.integers(0, 9)),
    min_size=1,
    max_size=12,
)
running_jobs = st.lists(st.tuples(st.integers(1, 4), st.integers(1, 50).map(lambda m: 60.0 * m)), max_size=5)


@settings(max_examples=150, deadline=None)
@given(queues, running_jobs, st.sampled_from([1, 2, 4]))
def test_no_pass_places_more_than_is_free_or_delays_the_reservation(
    specs: list[tuple[bool, int, float, int]], runs: list[tuple[int, float]], cores: int
) -> None:
    nodes = {f"n{i}": NodeView(f"n{i}", "all", cores, 0) for i in range(8 // cores * 2)}
    running: list[RunningView] = []
    names = list(nodes)
    for k, (width, end) in enumerate(runs):  # running jobs where they fit
        free = [n for n in names if nodes[n].free_cpus >= 1][:width]
        if len(free) < width:
            break
        parts = tuple(Part(n, 1.0, 0, 0) for n in free)
        apply(nodes, parts, False)
        running.append(RunningView(f"R{k}", parts, 10.0 + end, False, "hpc"))
    queue = [
        trial(f"J{i}", wall, float(at)) if is_trial else hpc(f"J{i}", w, wall, float(at))
        for i, (is_trial, w, wall, at) in enumerate(specs)
    ]
    free_before = {n: v.free_cpus for n, v in nodes.items()}
    starts, res = plan(queue, nodes, running, now=10.0, hour=12, cfg=SHARED)
    used: dict[str, float] = {}
    for p in starts:
        for x in p.parts:
            used[x.node] = used.get(x.node, 0.0) + x.cpus
    assert all(used[n] <= free_before[n] + 1e-9 for n in used)  # never more than free capacity
    by_id = {j.id: j for j in queue}
    ends = [(x, r.expected_end) for r in running for x in r.parts]
    ends += [(x, 10.0 + by_id[p.job_id].walltime_s) for p in starts for x in p.parts]
    for r in res.values():  # the reservation still holds after every start: nothing delays the head
        mine = set(nodes) if r.extra is not None else r.nodes  # a processor count: all the pool's cores
        held = sum(x.cpus for x, end in ends if x.node in mine and end > r.shadow)
        assert sum(nodes[n].cpus for n in mine) - held >= by_id[r.job_id].cpus, (r, starts)
