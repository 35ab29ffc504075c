"""RLScheduler's test protocol (SC20): its sampler, its trace reader and its FCFS/backfill rules, checked by hand."""

from __future__ import annotations

import pytest

from frontdesk.sim.rlsched import _gym_seed_words, gym_starts, parse_rl_trace, schedule_sequence
from frontdesk.sim.swf import Machine
from frontdesk.sim.textbook import Rule, replay
from frontdesk.sim.workload import SimJob, Workload


def swf(rows: list[tuple[int, int, int, int]], nodes: int = 4, procs: int | None = None) -> str:
    """SWF text from (submit, runtime, processors, requested time) rows, numbered 1, 2, ..."""
    head = [f"; MaxNodes: {nodes}"] + ([f"; MaxProcs: {procs}"] if procs else [])
    body = [f"{k + 1} {s} 0 {r} {p} -1 -1 {p} {q} -1 1 1 1 1 1 1 -1 -1" for k, (s, r, p, q) in enumerate(rows)]
    return "\n".join(head + body) + "\n"


def test_the_sampler_is_numpys_legacy_randint_seeded_the_way_gym_seeds_it() -> None:
    np = pytest.importorskip("numpy")
    for seed in (0, 1, 7):
        for n, batch in ((10_000, 0), (202_871, 10_000), (3000, 0)):
            rs = np.random.RandomState()
            rs.seed(_gym_seed_words(seed))
            expected = [int(rs.randint(1024, (batch or n) - 1024 - 1)) for _ in range(10)]
            assert gym_starts(n, seed, batch_slice=batch) == expected


def test_the_reader_keeps_its_conventions() -> None:
    """Requested -1 becomes the runtime, zero-runtime jobs are dropped, a negative runtime becomes 10 s,
    the allocated width is the larger of allocated and requested, MaxProcs falls back to MaxNodes."""
    text = "; MaxNodes: 8\n1 0 0 5 2 -1 -1 3 -1 -1 1 4 1 1 1 1 -1 -1\n2 1 0 0 1 -1 -1 1 9 -1 1 4 1 1 1 1 -1 -1\n"
    text += "3 2 0 -1 1 -1 -1 1 30 -1 1 4 1 1 1 1 -1 -1\n"
    tr = parse_rl_trace(text)
    assert [(j.number, j.runtime, j.procs, j.requested) for j in tr.jobs] == [(1, 5, 3, 5), (3, 10, 1, 30)]
    assert (tr.nodes, tr.procs) == (8, 8)
    with pytest.raises(ValueError, match="MaxNodes"):
        parse_rl_trace("1 0 0 5 2 -1 -1 3 -1 -1 1 4 1 1 1 1 -1 -1\n")


def easy_starts(rows: list[tuple[int, int, int, int]], procs: int = 4) -> dict[int, float | None]:
    jobs = [SimJob(str(k + 1), s, r, q, p, "u") for k, (s, r, p, q) in enumerate(rows)]
    res = replay(Workload("t", jobs, 0.0, None, "swf", Machine(procs, procs)), procs, Rule.EASY)
    return {int(r.job.id): r.start for r in res.records}


def test_its_backfilling_has_no_extra_processor_rule() -> None:
    """4 one-processor nodes. A (3 procs, 10 s) from 0. B (2 procs) at 1 blocks: estimate 10. C (1 proc, 20 s)
    at 2 would end after 10: RLScheduler's rule leaves it queued (it starts with B at 10); textbook EASY
    puts it on the extra processors (1 + 3 - 2 = 2 free at 10) at once."""
    rows = [(0, 10, 3, 10), (1, 5, 2, 5), (2, 20, 1, 20)]
    assert schedule_sequence(parse_rl_trace(swf(rows)), 0, True, 3) == {1: 0, 2: 10, 3: 10}
    assert easy_starts(rows) == {1: 0, 2: 10, 3: 2}


def test_its_backfilling_needs_a_job_to_end_strictly_before_the_estimate() -> None:
    """A (3 procs, 10 s) from 0. B (4 procs) at 1 blocks until 10 (no extra processors). D (1 proc, 8 s) at 2
    ends exactly at 10: not strictly before, so it waits for B (10-15); EASY (ends <= shadow) starts it at 2."""
    rows = [(0, 10, 3, 10), (1, 5, 4, 5), (2, 8, 1, 8)]
    assert schedule_sequence(parse_rl_trace(swf(rows)), 0, True, 3) == {1: 0, 2: 10, 3: 15}
    assert easy_starts(rows) == {1: 0, 2: 10, 3: 2}


def test_its_backfilling_starts_a_short_job_before_the_blocked_head_and_fcfs_does_not() -> None:
    """A (3 procs, 10 s) from 0; B (4 procs) at 1 blocks until 10; C (1 proc, 5 s) at 2 ends at 7 < 10."""
    tr = parse_rl_trace(swf([(0, 10, 3, 10), (1, 5, 4, 5), (2, 5, 1, 5)]))
    assert schedule_sequence(tr, 0, True, 3) == {1: 0, 2: 10, 3: 2}
    assert schedule_sequence(tr, 0, False, 3) == {1: 0, 2: 10, 3: 15}


def test_jobs_take_whole_nodes_of_maxprocs_over_maxnodes_processors() -> None:
    """2 nodes of 2 processors: A (3 procs) takes both nodes, so B (1 proc) waits for A although a processor
    count would leave one free."""
    tr = parse_rl_trace(swf([(0, 10, 3, 10), (1, 5, 1, 5)], nodes=2, procs=4))
    assert schedule_sequence(tr, 0, True, 2) == {1: 0, 2: 10}


def test_the_sequence_ends_at_its_length_and_later_arrivals_are_not_scheduled() -> None:
    tr = parse_rl_trace(swf([(0, 10, 1, 10), (1, 5, 1, 5), (2, 5, 1, 5)]))
    assert schedule_sequence(tr, 1, False, 1) == {2: 1}
