"""Workloads: the SWF reader, the generator's published defaults, the validation mix."""

from __future__ import annotations

from pathlib import Path
from statistics import median

import pytest

from frontdesk.sim.compare import load_workload
from frontdesk.sim.workload import AgentMix, agent_day, parse_swf, validation_mix

DATA = Path(__file__).parents[2] / "data" / "sim"


def test_swf_sample_is_read_field_by_field() -> None:
    wl = load_workload(str(DATA / "sample.swf"))
    assert len(wl.jobs) == 11  # job 8 has an unknown runtime
    j1 = wl.jobs[0]
    assert (j1.id, j1.submit, j1.runtime, j1.cpus, j1.walltime, j1.principal) == (
        "s1",
        0,
        3600,
        256,
        7200,
        "u1",
    )
    assert next(j for j in wl.jobs if j.id == "s5").cancelled
    assert wl.cluster == "swf:512"


def test_swf_rejects_short_lines() -> None:
    with pytest.raises(ValueError, match="18"):
        parse_swf("1 0 -1 10 1\n")


def test_generator_defaults_follow_the_published_measurement() -> None:
    m = AgentMix()
    wl = agent_day(m, seed=3)
    small = [j for j in wl.jobs if j.template.split(":")[1].startswith("task")]
    agent = [j for j in small if j.agent]
    human = [j for j in small if not j.agent]
    assert abs(len(agent) / len(small) - m.agent_submission_share) < 0.04
    short_a = sum(j.runtime < 60 for j in agent if not j.cancelled) / len([j for j in agent if not j.cancelled])
    short_h = sum(j.runtime < 60 for j in human if not j.cancelled) / len([j for j in human if not j.cancelled])
    assert abs(short_a - 0.327) < 0.04 and abs(short_h - 0.093) < 0.03
    assert abs(median(j.runtime for j in agent if not j.cancelled) - 193) < 40
    assert abs(median(j.runtime for j in human if not j.cancelled) - 278) < 40
    assert abs(sum(j.cancelled for j in agent) / len(agent) - 0.103) < 0.03
    assert abs(sum(j.cancelled for j in human) / len(human) - 0.023) < 0.015
    assert len({j.principal for j in wl.jobs if j.agent}) == round(m.users * m.agent_user_share)
    assert len({j.principal for j in wl.jobs}) == m.users


def test_generator_is_deterministic_per_seed() -> None:
    a, b = agent_day(AgentMix(hours=2, warmup_hours=0), 7), agent_day(AgentMix(hours=2, warmup_hours=0), 7)
    assert [(j.submit, j.runtime) for j in a.jobs] == [(j.submit, j.runtime) for j in b.jobs]


def test_validation_mix_shape() -> None:
    wl = validation_mix()
    agents = [j for j in wl.jobs if j.agent]
    assert len(agents) == 50 and all(240 <= j.runtime <= 360 for j in agents)
    training = [j for j in wl.jobs if j.nodes == 4]
    assert len(training) == 2 and all(j.gpus == 32 for j in training)
    assert [j.cpus for j in wl.jobs if j.principal == "physicist"] == [256]
