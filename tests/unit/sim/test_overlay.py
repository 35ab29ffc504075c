"""The agent overlay on a real trace: the published shares, floods, and the trace's own jobs untouched."""

from __future__ import annotations

from pathlib import Path

import pytest

from frontdesk.sim.compare import load_workload, run
from frontdesk.sim.overlay import Overlay, overlay_agents
from frontdesk.sim.swf import Machine
from frontdesk.sim.workload import SimJob, Workload

SAMPLE = Path(__file__).parents[2] / "data" / "sim" / "sample.swf"


def synthetic(n: int = 4000) -> Workload:
    jobs = [SimJob(f"h{i}", 60.0 * i, 1800.0, 3600.0, 8, f"u{i % 5}") for i in range(n)]
    return Workload("hpc", jobs, 0.0, None, "swf", Machine(64, 64))


def test_agent_jobs_make_the_published_shares() -> None:
    wl = synthetic()
    mixed = overlay_agents(wl, seed=3)
    agents = [j for j in mixed.jobs if j.agent]
    assert len(agents) / len(mixed.jobs) == pytest.approx(0.558, abs=0.002)
    whole = [j for j in agents if not j.cancelled]  # a cancel cuts the runtime short
    assert sum(j.runtime < 60 for j in whole) / len(whole) == pytest.approx(0.327, abs=0.025)
    assert sum(j.cancelled for j in agents) / len(agents) == pytest.approx(0.103, abs=0.02)
    assert all(j.trial and j.cpus <= 4 and j.runtime <= j.walltime <= 600 for j in agents)
    assert [j.submit for j in mixed.jobs] == sorted(j.submit for j in mixed.jobs)


def test_the_traces_own_jobs_are_kept_as_they_are() -> None:
    wl = synthetic(500)
    mixed = overlay_agents(wl, seed=1)
    hpc = [j for j in mixed.jobs if not j.agent]
    assert [(j.id, j.submit, j.runtime, j.cpus) for j in hpc] == [(j.id, j.submit, j.runtime, j.cpus) for j in wl.jobs]
    assert overlay_agents(wl, seed=1).jobs == mixed.jobs  # a seed gives the same overlay
    assert overlay_agents(wl, seed=2).jobs != mixed.jobs


def test_agents_come_in_floods() -> None:
    """Consecutive agent submissions a few seconds apart: most agent jobs have a neighbour within 5 s."""
    agents = sorted(j.submit for j in overlay_agents(synthetic(), seed=1).jobs if j.agent)
    close = sum(1 for a, b in zip(agents, agents[1:], strict=False) if b - a <= 5.0)
    assert close / len(agents) > 0.6


def test_a_share_outside_zero_to_one_is_refused_and_zero_adds_nothing() -> None:
    wl = synthetic(10)
    with pytest.raises(ValueError, match="agent share"):
        overlay_agents(wl, Overlay(share=1.0))
    assert overlay_agents(wl, Overlay(share=0.0)).jobs == wl.jobs


def test_every_policy_replays_an_overlaid_trace() -> None:
    wl = overlay_agents(load_workload(str(SAMPLE)), seed=1)
    for spec in ("easy-textbook", "slurm", "slurm-frontdesk", "frontdesk"):
        recs = run(wl, spec).records
        assert len(recs) == len(wl.jobs) and all(r.end is not None for r in recs), spec
