"""The policy plug-in in a real gateway: classes recorded, cluster view, versions, trial gaming, drain."""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

from frontdesk.errors import FrontdeskError
from gateway_helpers import cli_submit

PY = sys.executable

CONFIG = """
[local]
cpus = 4
memory = "4G"

[policy]
[[policy.pools]]
name = "agent"
classes = ["agent", "inference"]
cpus = 2
cpu_oversubscribe = 2.0
qos = "interactive"

[[policy.pools]]
name = "batch"
classes = ["hpc", "training"]
cpus = 2
allocation = "spread"

[policy.trial]
walltime_cap = "3s"
cap_hits = 2
strike_window = "10m"
cooldown = "1h"
"""


def events(gw: Any, kind: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = gw.client.request("GET", f"/v1/events?kind={kind}")
    return found


def test_class_reason_pool_and_cluster_view(gateway_factory: Any, workdir: Path) -> None:
    gw = gateway_factory(config=CONFIG, env={"FRONTDESK_LOCAL_GPUS": "2"})
    job = cli_submit(gw, workdir, {"command": [PY, "-c", "pass"], "resources": {"walltime": "5m", "memory": "64M"}})
    assert job["job_class"] == "agent"
    with sqlite3.connect(gw.home / "frontdesk.db") as conn:
        reason = conn.execute("SELECT class_reason FROM jobs WHERE id=?", (job["id"],)).fetchone()[0]
    assert reason.startswith("small (1 cores, 0 GPUs) and 5m00s (<= 30m00s)")
    assert job["partition"] == "agent"
    hpc = cli_submit(gw, workdir, {"command": [PY, "-c", "pass"], "resources": {"memory": "64M"}})
    assert hpc["job_class"] == "hpc" and hpc["partition"] == "batch"
    assert job["priority"] > hpc["priority"]
    for j in (job, hpc):
        assert gw.wait_state(j["id"], {"COMPLETED"})["state"] == "COMPLETED"
    r = gw.cli("cluster", "--json")
    assert r.returncode == 0, r.stderr
    view = json.loads(r.stdout)["policy"]
    assert [p["name"] for p in view["pools"]] == ["agent", "batch"]
    assert {a["name"] for a in view["catalog"]} >= {
        "V100",
        "A100-40G",
        "A100-80G",
        "H100",
        "H200",
        "B200",
        "L40S",
        "MI250X",
    }
    assert sum(view["gpu_models"].values()) == 2  # catalog names for real GPUs, else "virtual"
    text = gw.cli("cluster")
    assert "pool agent" in text.stdout and "H200" in text.stdout
    report = gw.client.request("GET", f"/v1/jobs/{job['id']}/report")
    assert report["extra"]["policy"]["pool"] == "agent"
    assert report["extra"]["policy"]["class_reason"] == reason


def test_versions_history_rollback_and_invalid_file_refused(gateway_factory: Any) -> None:
    gw = gateway_factory(config=CONFIG)
    toml = gw.home / "frontdesk.toml"
    hist = json.loads(gw.cli("policy", "history", "--json").stdout)
    assert [v["version"] for v in hist["versions"]] == [1] and hist["active"] == 1
    toml.write_text(CONFIG.replace("cpu_oversubscribe = 2.0", "cpu_oversubscribe = 4.0"))
    r = gw.cli("policy", "reload", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["version"] == 2
    toml.write_text(CONFIG.replace("cpu_oversubscribe = 2.0", 'cpu_oversubscribe = "lots"'))
    r = gw.cli("policy", "reload")
    assert r.returncode == 2
    assert "pools.0.cpu_oversubscribe" in r.stderr and r.stderr.count("\n") == 1
    show = json.loads(gw.cli("policy", "show", "--json").stdout)
    assert show["version"] == 2 and show["config"]["pools"][0]["cpu_oversubscribe"] == 4.0
    r = gw.cli("policy", "rollback", "1", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"version": 3, "from": 1}
    show = json.loads(gw.cli("policy", "show", "--json").stdout)
    assert show["version"] == 3 and show["config"]["pools"][0]["cpu_oversubscribe"] == 2.0
    text = gw.cli("policy", "history").stdout
    assert "rollback to 1" in text and text.splitlines()[-1].startswith("*")
    assert gw.cli("policy", "rollback", "99").returncode == 3
    loaded = events(gw, "policy.loaded")
    assert any(e["data"].get("refused") for e in loaded)


def test_principal_gaming_the_trial_privilege_loses_it(gateway_factory: Any, workdir: Path) -> None:
    gw = gateway_factory(config=CONFIG)
    spec = {
        "command": [PY, "-c", "import time; time.sleep(30)"],
        "trial": True,
        "resources": {"walltime": "3s", "memory": "64M"},
    }
    first = cli_submit(gw, workdir, spec)
    assert not first.get("notices")
    for _ in range(2):  # trials that run to their cap, chained from a "checkpoint"
        job = cli_submit(gw, workdir, spec)
        gw.wait_state(job["id"], {"TIMEOUT"}, timeout=30)
    deadline = time.monotonic() + 60
    while not (revoked := events(gw, "policy.trial_revoked")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert revoked, "no policy.trial_revoked event"
    data = revoked[0]["data"]
    assert data["principal"] == first["principal"] and "ran to the 3.0s cap" in data["reason"]
    again = cli_submit(gw, workdir, spec)
    assert any("trial privilege not applied" in n["text"] and "revoked" in n["text"] for n in again["notices"])
    assert again["priority"] < first["priority"]
    view = json.loads(gw.cli("cluster", "--json").stdout)["policy"]
    assert view["trial_revoked"][0]["principal"] == first["principal"]
    gw.restart()  # the journal keeps the revocation: a restart does not hand the privilege back
    view = json.loads(gw.cli("cluster", "--json").stdout)["policy"]
    assert view["trial_revoked"][0]["principal"] == first["principal"]
    after = cli_submit(gw, workdir, spec)
    assert any("revoked" in n["text"] for n in after["notices"])


def test_drained_machine_takes_no_new_job(gateway_factory: Any, workdir: Path) -> None:
    gw = gateway_factory(config=CONFIG)
    gw.client.request("POST", "/v1/policy/drain", {"node": "local", "reason": "GPU fan failed"})
    job = cli_submit(gw, workdir, {"command": [PY, "-c", "pass"], "resources": {"walltime": "1m", "memory": "64M"}})
    time.sleep(1.0)
    assert gw.client.job(job["id"])["state"] == "PENDING"
    drained = events(gw, "node.drained")
    assert drained and drained[0]["data"]["detail"] == "GPU fan failed"
    gw.client.request("POST", "/v1/policy/undrain", {"node": "local"})
    assert gw.wait_state(job["id"], {"COMPLETED"})["state"] == "COMPLETED"


def test_hostile_drain_bodies_are_one_line_refusals_and_drain_nothing(gateway_factory: Any) -> None:
    gw = gateway_factory(config=CONFIG)
    bodies: list[dict[str, Any]] = [
        {},  # no node: nothing is drained by default
        {"node": "\u0000"},
        {"node": "n" * 100_000},
        {"node": "a\nb"},
        {"node": "local", "bogus": 1},
        {"node": "local", "reason": "line\n#SBATCH --uid=0"},
        {"node": 7},
    ]
    for body in bodies:
        try:
            gw.client.request("POST", "/v1/policy/drain", body)
        except FrontdeskError as err:
            assert "\n" not in str(err), body
        else:
            raise AssertionError(f"accepted {body!r}")
    for body in ({"version": -1}, {"version": 1, "x": 2}):
        try:
            gw.client.request("POST", "/v1/policy/rollback", body)
        except FrontdeskError as err:
            assert "\n" not in str(err)
        else:
            raise AssertionError(f"accepted {body!r}")
    assert not json.loads(gw.cli("cluster", "--json").stdout)["policy"].get("drained")
    assert events(gw, "node.drained") == []
