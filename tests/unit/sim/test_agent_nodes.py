"""`--agent-nodes`: agent work on a partition outside the trace's machine; the trace's own jobs keep the machine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from frontdesk.sim.compare import AgentNodes, load_workload, run
from frontdesk.sim.overlay import overlay_agents
from frontdesk.sim.swf import Machine
from frontdesk.sim.workload import SimJob, Workload

SAMPLE = Path(__file__).parents[2] / "data" / "sim" / "sample.swf"


def _busy_machine() -> Workload:
    """4 processors: a job holding all of them for an hour, then a 1-processor 60 s job (which frontdesk's
    classifier would call agent work), then trials arriving while the machine is full."""
    jobs = [
        SimJob("wide", 0.0, 3600.0, 3600.0, 4, "u1"),
        SimJob("small", 10.0, 60.0, 120.0, 1, "u2"),
        *(
            SimJob(f"t{i}", 20.0 + i, 30.0, 600.0, 2, "agent01", group="agents", trial=True, agent=True)
            for i in range(5)
        ),
    ]
    return Workload("busy", jobs, 0.0, None, "swf", Machine(4, 4))


def test_trials_start_at_once_on_the_agent_nodes_while_the_machine_is_full() -> None:
    recs = {r.job.id: r for r in run(_busy_machine(), "frontdesk", AgentNodes(1, 8)).records}
    assert all(recs[f"t{i}"].start == recs[f"t{i}"].submit for i in range(4))  # 4 x 2 cores fill the node
    assert recs["t4"].start == pytest.approx(50.0)  # the fifth waits for the first to end
    assert recs["wide"].start == 0.0


def test_the_traces_own_jobs_never_go_to_the_agent_nodes() -> None:
    """The small hpc job would fit on the idle agent node, but a facility's user submits to the machine."""
    recs = {r.job.id: r for r in run(_busy_machine(), "frontdesk", AgentNodes(2, 8)).records}
    assert recs["small"].start == 3600.0


def test_hpc_jobs_run_exactly_as_without_agents_given_room() -> None:
    wl = load_workload(str(SAMPLE))
    alone = {r.job.id: (r.start, r.end) for r in run(wl, "frontdesk").records}
    mixed = run(overlay_agents(wl, seed=1), "frontdesk", AgentNodes(4, 32)).records
    assert {r.job.id: (r.start, r.end) for r in mixed if not r.job.agent} == alone
    assert all(r.start == r.submit for r in mixed if r.job.agent)


def test_agent_nodes_model_frontdesk_only_and_need_a_trace() -> None:
    with pytest.raises(ValueError, match="frontdesk's routing"):
        run(_busy_machine(), "easy-textbook", AgentNodes(1))
    with pytest.raises(ValueError, match="frontdesk's routing"):
        run(load_workload("validation"), "frontdesk", AgentNodes(1))
    with pytest.raises(ValueError, match="at least 1"):
        AgentNodes(0)


def test_simulate_cli_overlay_and_agent_nodes(capsys: pytest.CaptureFixture[str]) -> None:
    from frontdesk.cli.main import main

    assert main(["simulate", str(SAMPLE), "--overlay", "--agent-nodes", "2", "--agent-node-cores", "16", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [p["policy"] for p in data["policies"]] == ["frontdesk+2x16"]
    assert data["workload"] == "sample.swf+agents"
    assert main(["simulate", str(SAMPLE), "--agent-nodes", "0"]) == 2
    assert "at least 1" in capsys.readouterr().err
    assert main(["simulate", "agent-day", "--overlay"]) == 2
    assert "--overlay" in capsys.readouterr().err
