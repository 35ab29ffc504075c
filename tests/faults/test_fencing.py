"""Items 2-4 of issue 12: a lost attempt is fenced before it is declared lost or retried, gateways on one host
keep to their own cgroups, and processes that leave with setsid or a double fork die on cancel and timeout."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest
from fault_helpers import alive, cgroup_dir, cgroups_usable, escaping_tree, pids_in, shepherd_pid, until

pytestmark = pytest.mark.slow

TRACKING = ["cgroup", "subreaper"]


def _gateway(factory: Any, tracking: str) -> Any:
    if tracking == "cgroup" and not cgroups_usable():
        pytest.skip("cgroups need root and a writable cgroup v1 memory hierarchy")
    env = {"FRONTDESK_PLUGINS": "none"}
    if tracking == "subreaper":
        env["FRONTDESK_NO_CGROUP"] = "1"
    return factory(env=env)


def _submit(gw: Any, cmd: str, cwd: Path, **spec: Any) -> dict[str, Any]:
    job: dict[str, Any] = gw.client.submit(spec={"command": ["/bin/sh", "-c", cmd], **spec}, context={"cwd": str(cwd)})
    return job


@pytest.mark.parametrize("tracking", TRACKING)
def test_killed_shepherd_fences_the_whole_job_before_node_fail(gateway_factory: Any, tmp_path: Path, tracking: str):
    gw = _gateway(gateway_factory, tracking)
    job = _submit(gw, escaping_tree(tmp_path), tmp_path)
    until((tmp_path / "ready").exists, what="the canary tree")
    pids = pids_in(tmp_path)
    assert len(pids) == 7 and all(alive(p) for p in pids)
    bid = gw.wait_state(job["id"], {"RUNNING"})["backend_id"]
    os.kill(shepherd_pid(gw.home, bid), signal.SIGKILL)
    ended = gw.wait_state(job["id"], {"NODE_FAIL"})
    assert "killed" in ended["reason"]
    assert [p for p in pids if alive(p)] == [], "NODE_FAIL was declared while the job still ran"
    if tracking == "cgroup":
        assert not cgroup_dir(gw.home, bid).exists()


def test_killed_shepherd_with_retry_never_runs_two_attempts_at_once(gateway_factory: Any, tmp_path: Path):
    gw = _gateway(gateway_factory, "subreaper")
    # Each attempt records its pid, and an overlap if an earlier attempt's process still runs (zombies do not:
    # this container's pid 1 reaps slowly).
    cmd = (
        f'cd \'{tmp_path}\'; for f in run-*.pid; do [ -e "$f" ] && [ -e /proc/$(cat "$f") ] '
        f'&& ! grep -q \') Z\' /proc/$(cat "$f")/stat && echo "$f" >> overlap; done; '
        f"setsid sh -c 'echo $$ > run-'$FRONTDESK_ATTEMPT'.pid; exec sleep 300' & "
        f"[ $FRONTDESK_ATTEMPT = 1 ] && exec sleep 300; exit 0"
    )
    job = _submit(gw, cmd, tmp_path, retry={"count": 1, "on": ["NODE_FAIL"]})
    until((tmp_path / "run-1.pid").exists, what="attempt 1")
    first = int((tmp_path / "run-1.pid").read_text())
    bid = gw.wait_state(job["id"], {"RUNNING"})["backend_id"]
    os.kill(shepherd_pid(gw.home, bid), signal.SIGKILL)
    rep = gw.client.wait([job["id"]], "all", 60)["reports"][0]
    assert rep["state"] == "COMPLETED" and rep["attempts"] == 2
    assert not (tmp_path / "overlap").exists(), "attempt 2 ran while attempt 1 was still alive"
    assert not alive(first)


def test_gateway_restart_fences_an_attempt_whose_shepherd_died_meanwhile(gateway_factory: Any, tmp_path: Path):
    gw = _gateway(gateway_factory, "subreaper")
    job = _submit(gw, escaping_tree(tmp_path, leaves=2), tmp_path)
    until((tmp_path / "ready").exists, what="the canary tree")
    pids = pids_in(tmp_path)
    bid = gw.wait_state(job["id"], {"RUNNING"})["backend_id"]
    gw.kill9()
    os.kill(shepherd_pid(gw.home, bid), signal.SIGKILL)
    gw.start()
    ended = gw.wait_state(job["id"], {"NODE_FAIL"})
    assert [p for p in pids if alive(p)] == [] and "killed" in ended["reason"]


@pytest.mark.parametrize("how", ["cancel", "timeout"])
@pytest.mark.parametrize("tracking", TRACKING)
def test_setsid_and_double_fork_escapers_die(gateway_factory: Any, tmp_path: Path, tracking: str, how: str):
    gw = _gateway(gateway_factory, tracking)
    extra = {"resources": {"walltime": 3}} if how == "timeout" else {}
    job = _submit(gw, escaping_tree(tmp_path), tmp_path, **extra)
    until((tmp_path / "ready").exists, what="the canary tree")
    pids = pids_in(tmp_path)
    assert len(pids) == 7
    if how == "cancel":
        gw.client.cancel(job["id"])
    ended = gw.wait_state(job["id"], {"CANCELLED", "TIMEOUT"})
    assert ended["state"] == ("CANCELLED" if how == "cancel" else "TIMEOUT")
    assert [p for p in pids if alive(p)] == []


@pytest.mark.parametrize("tracking", TRACKING)
def test_escapers_left_by_a_job_that_ends_on_its_own_die(gateway_factory: Any, tmp_path: Path, tracking: str):
    # the shepherd's cheap "nothing left" check (empty cgroup and process group, no child) must not miss them
    gw = _gateway(gateway_factory, tracking)
    job = _submit(gw, escaping_tree(tmp_path).removesuffix("exec sleep 300") + "exit 0", tmp_path)
    report = gw.client.wait([job["id"]], "all", 60)["reports"][0]
    pids = pids_in(tmp_path)
    assert report["state"] == "COMPLETED" and len(pids) == 7
    assert [p for p in pids if alive(p)] == []


def test_bounded_tree_of_fifty_setsid_sleeps_dies_on_cancel(gateway_factory: Any, tmp_path: Path):
    gw = _gateway(gateway_factory, "subreaper")
    cmd = (
        f"cd '{tmp_path}'; for i in $(seq 50); do setsid sh -c 'echo $$ > s-'$i'.pid; exec sleep 300' & done; "
        f"while [ $(ls s-*.pid | wc -l) -lt 50 ]; do sleep 0.05; done; touch ready; exec sleep 300"
    )
    job = _submit(gw, cmd, tmp_path)
    until((tmp_path / "ready").exists, what="50 sleeps")
    pids = pids_in(tmp_path, "s-*.pid")
    assert len(pids) == 50
    gw.client.cancel(job["id"])
    gw.wait_state(job["id"], {"CANCELLED"})
    assert [p for p in pids if alive(p)] == []


def test_two_gateways_on_one_host_keep_to_their_own_jobs(gateway_factory: Any, tmp_path: Path):
    if not cgroups_usable():
        pytest.skip("cgroups need root and a writable cgroup v1 memory hierarchy")
    a = gateway_factory(env={"FRONTDESK_PLUGINS": "none"})
    b = gateway_factory(env={"FRONTDESK_PLUGINS": "none"})
    gate = tmp_path / "gate"
    long = _submit(a, f"while [ ! -e '{gate}' ]; do sleep 0.05; done", tmp_path, resources={"memory": "64M"})
    short = _submit(b, "true", tmp_path, resources={"memory": "64M"})
    assert long["id"] == short["id"], "both fresh gateways number their first job alike"
    a_bid = a.wait_state(long["id"], {"RUNNING"})["backend_id"]
    b.wait_state(short["id"], {"COMPLETED"})
    assert cgroup_dir(a.home, a_bid) != cgroup_dir(b.home, a_bid)
    assert cgroup_dir(a.home, a_bid).exists() and a.client.job(long["id"])["state"] == "RUNNING"
    gate.touch()
    assert a.wait_state(long["id"], {"COMPLETED", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY"})["state"] == "COMPLETED"
    assert not cgroup_dir(a.home, a_bid).exists()


def test_failed_starts_leave_no_cgroup_and_say_why(gateway_factory: Any, tmp_path: Path):
    gw = _gateway(gateway_factory, "cgroup")
    missing = _submit(gw, "true", tmp_path, resources={"memory": "64M"}, workdir=str(tmp_path / "no-such-dir"))
    noprog = gw.client.submit(spec={"command": ["/no/such/program"], "resources": {"memory": "64M"}})
    for job in (missing, noprog):
        ended = gw.wait_state(job["id"], {"FAILED"})
        assert not cgroup_dir(gw.home, ended["backend_id"] or f"{job['id']}.1").exists()
    assert "working directory" in gw.client.job(missing["id"])["reason"]
    assert "does not exist" in gw.client.job(missing["id"])["reason"]
