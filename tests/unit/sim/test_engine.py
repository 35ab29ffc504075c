"""The simulator: the same policy code as the gateway, the issue's criteria on the validation mix."""

from __future__ import annotations

import json
from pathlib import Path

from frontdesk.cli.main import main
from frontdesk.sim.compare import compare, load_workload
from frontdesk.sim.workload import AgentMix, agent_day

DATA = Path(__file__).parents[2] / "data" / "sim"


def by_policy(summaries: list[dict]) -> dict[str, dict]:
    return {s["policy"]: s for s in summaries}


def test_validation_mix_meets_the_criteria_beside_fifo_and_easy() -> None:
    res = by_policy(compare(load_workload("validation"), ["fifo", "easy", "frontdesk"]))
    fd, easy, fifo = res["frontdesk"], res["easy"], res["fifo"]
    assert all(s["unfinished"] == 0 for s in res.values())
    assert fd["classes"]["agent"]["wait_s"]["mean"] < 30
    assert fd["classes"]["training"]["wait_s"]["max"] <= 300
    assert fd["classes"]["hpc"]["preempted"] == 0
    assert fd["classes"]["hpc"]["bsld"]["mean"] <= 1.1 * easy["classes"]["hpc"]["bsld"]["mean"]
    assert fd["gpu_util"] >= 0.6
    assert fifo["classes"]["agent"]["wait_s"]["mean"] > fd["classes"]["agent"]["wait_s"]["mean"]


def test_swf_replay_under_every_policy() -> None:
    res = compare(load_workload(str(DATA / "sample.swf")), ["fifo", "easy", "frontdesk"])
    for s in res:
        assert s["unfinished"] == 0 and s["jobs"] == 11
        assert 0 < s["cpu_util"] <= 1 and s["gpu_util"] == 0


def test_gaming_agent_loses_the_trial_privilege_in_the_simulated_day() -> None:
    wl = agent_day(
        AgentMix(hours=8, warmup_hours=0, small_jobs_per_day=600, training_jobs_per_day=20, hpc_jobs_per_day=20),
        seed=2,
    )
    fd = by_policy(compare(wl, ["frontdesk"]))["frontdesk"]
    gamer = "agent00"
    revs = [r for r in fd["trial_revocations"] if r["principal"] == gamer]
    assert revs and any("cap" in r["reason"] for r in revs)


def test_simulate_cli_json(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["simulate", "validation", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [p["policy"] for p in data["policies"]] == ["fifo", "easy", "frontdesk"]
    assert {"classes", "gpu_util", "cpu_util", "bsld_mean", "fairness_jain", "trial_turnaround_s"} <= set(
        data["policies"][2]
    )


def test_simulate_cli_policy_file_and_bad_workload(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    pol = tmp_path / "narrow.toml"
    pol.write_text('[policy]\n[[policy.pools]]\nname = "all"\nallocation = "spread"\nnodes = ["*"]\n')
    assert main(["simulate", "validation", "--policy", "easy", "--policy", str(pol)]) == 0
    out = capsys.readouterr().out
    assert "easy" in out and "narrow" in out and "GPU utilisation" in out
    assert main(["simulate", "nonsense"]) == 2
    assert "unknown workload" in capsys.readouterr().err


def test_borrowed_nodes_are_reclaimed_and_the_borrower_requeued_or_preempted() -> None:
    from frontdesk.policy.config import parse_policy
    from frontdesk.policy.model import NodeView
    from frontdesk.sim.engine import simulate
    from frontdesk.sim.policies import FrontdeskPolicy
    from frontdesk.sim.workload import SimJob, Workload

    for mode, ended in (("requeue", False), ("preempt", True)):
        cfg = parse_policy(
            {
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
                        "max_duration": "1h",
                        "keep_idle": 0,
                        "on_reclaim": mode,
                        "only_fitting": False,
                    }
                ],
            }
        )
        nodes = [
            NodeView("ag0", "agent", 64, 2**40, 8, "H100"),
            NodeView("tr0", "training", 64, 2**40, 8, "H100"),
        ]
        jobs = [
            SimJob("t0", 0, 7200, 7200, 64, "u", 2**30, 8, declared="training", nodes=1),
            SimJob("t1", 1, 7200, 7200, 64, "u", 2**30, 8, declared="training", nodes=1),
        ]
        res = simulate(Workload("borrow", jobs), nodes, FrontdeskPolicy(cfg), start_hour=23)
        rec = {r.job.id: r for r in res.records}
        borrowed = [r for r in rec.values() if r.preempted]
        assert len(borrowed) == 1
        if ended:
            assert borrowed[0].end == borrowed[0].submit + 3600 and borrowed[0].job.id == "t1"
        else:
            assert borrowed[0].start is not None and borrowed[0].start >= 3600
