"""Workloads: the SWF reader, the generator's published defaults, the validation mix."""

from __future__ import annotations

from pathlib import Path
from statistics import median

import pytest

from frontdesk.sim.compare import load_workload
from frontdesk.sim.swf import Machine
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
    assert wl.cluster == "swf" and wl.machine == Machine(512, 1, "header MaxProcs/MaxNodes")
    assert wl.swf is not None and (wl.swf.lines, wl.swf.kept, wl.swf.unknown) == (12, 11, 1)


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


KTH_LIKE = """; Computer: a 6-processor test machine
; MaxNodes: 3
; MaxProcs: 6
1  0 -1  100  2 -1 -1  2  200 -1 1 1 1 1 1 -1 -1 -1
2  5 -1    0  1 -1 -1  1   60 -1 0 1 1 1 1 -1 -1 -1
3  6 -1  300  4 -1 -1  4  120 -1 1 2 1 2 1 -1 -1 -1
4  7 -1   50  8 -1 -1  8  100 -1 1 2 1 2 1 -1 -1 -1
5  8 -1   -1  1 -1 -1  1   60 -1 0 3 1 3 1 -1 -1 -1
6  9 -1   40  1 -1 -1 -1   -1 -1 1 3 1 3 1 -1 -1 -1
"""


def test_swf_replays_on_the_traces_own_machine_with_explicit_cleaning() -> None:
    from frontdesk.sim.cluster import build_cluster

    wl = parse_swf(KTH_LIKE, "kth-like")
    assert wl.machine == Machine(6, 3, "header MaxProcs/MaxNodes")
    nodes = build_cluster("swf", wl.machine)
    assert [(n.cpus, n.gpus) for n in nodes] == [(2, 0)] * 3  # exactly the header's machine, no agent node
    assert [j.id for j in wl.jobs] == ["s1", "s3", "s6"]
    rep = wl.swf
    assert rep is not None
    assert (rep.lines, rep.kept, rep.unknown, rep.zero_runtime, rep.too_wide) == (6, 3, 1, 1, 1)
    assert (rep.underrequested, rep.no_request) == (1, 1)
    assert wl.jobs[1].walltime == 300  # requested 120 < runtime 300: extended by default
    assert wl.jobs[2].walltime == 40 and wl.jobs[2].cpus == 1  # no request: the runtime; allocated procs
    text = "\n".join(rep.lines_text())
    assert "6 processors on 3 node(s)" in text and "1 wider than the machine (refused)" in text


def test_swf_cleaning_options_and_machine_override() -> None:
    from frontdesk.sim.swf import Cleaning, Underrequested

    keep = parse_swf(KTH_LIKE, "x", cleaning=Cleaning(False, Underrequested.KEEP))
    assert [j.id for j in keep.jobs] == ["s1", "s2", "s3", "s6"]
    assert next(j for j in keep.jobs if j.id == "s3").walltime == 120  # killed at its limit when replayed
    drop = parse_swf(KTH_LIKE, "x", cleaning=Cleaning(True, Underrequested.DROP))
    assert [j.id for j in drop.jobs] == ["s1", "s6"]
    wide = parse_swf(KTH_LIKE, "x", machine=Machine(8, 1))
    assert [j.id for j in wide.jobs] == ["s1", "s3", "s4", "s6"] and wide.swf and wide.swf.too_wide == 0
    no_header = parse_swf("\n".join(KTH_LIKE.splitlines()[3:]), "x")
    assert no_header.machine is not None and no_header.machine.procs == 8  # the widest job
    with pytest.raises(ValueError, match="divide"):
        Machine(7, 2)
    with pytest.raises(ValueError, match="non-numeric"):
        parse_swf("1 0 -1 x 1 -1 -1 1 60 -1 1 1 1 1 1 -1 -1 -1\n")


def test_simulate_cli_reports_machine_and_cleaning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from frontdesk.cli.main import main

    trace = tmp_path / "t.swf"
    trace.write_text(KTH_LIKE)
    assert main(["simulate", str(trace), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["swf"]["machine"] == {"procs": 6, "nodes": 3, "source": "header MaxProcs/MaxNodes"}
    assert data["swf"]["too_wide"] == 1 and data["swf"]["cleaning"]["underrequested"] == "extend"
    assert [p["policy"] for p in data["policies"]] == [
        "fcfs",
        "easy-textbook",
        "conservative",
        "fifo",
        "easy",
        "frontdesk",
    ]
    assert main(["simulate", str(trace), "--procs", "8", "--underrequested", "drop", "--keep-zero-runtime"]) == 0
    out = capsys.readouterr().out
    assert "8 processors on 1 node(s) (--procs/--nodes)" in out and "0 wider than the machine" in out
    assert main(["simulate", str(trace), "--procs", "7", "--nodes", "2"]) == 2
    assert "divide evenly" in capsys.readouterr().err
    assert main(["simulate", "validation", "--policy", "easy-textbook"]) == 2
    assert "SWF traces" in capsys.readouterr().err
