"""A gateway SIGKILLed at chosen moments of an array's life: no task lost or run twice, one end per job.

Moments (embedded backend; mid hand-over of a Slurm array: tests/slurm/test_array_kills_slurm.py): at each stage of
the array's own end (its state is stored before `_finish`; the end-path points are hit once per task first, so
hit `TASKS + 1` is the array's), and mid cancel (`before_backend_cancel:n`: n-1 tasks asked, the
n-th stored, the rest not reached). After a restart: every task ran exactly once (or never, when cancelled),
and the array and each task have exactly one terminal `job.state` and one `job.report` event.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from fault_helpers import raw_request, until

pytestmark = pytest.mark.slow

TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "DEPENDENCY_NEVER_SATISFIED"}
TASKS = 6
SESSION_CONFIG = "[agents]\nbatch_window_s = 0.5\nlease_s = 5\n"


def _died(gw: Any) -> None:
    until(lambda: gw.proc.poll() is not None, timeout=120, what="the gateway to die at its kill point")
    assert gw.proc.returncode == -9


def _each_once(gw: Any, parent: int, tasks: list[int], state: str) -> None:
    res = gw.client.wait([parent, *tasks], "all", 180)
    assert res["done"], res["pending"]
    events = list(gw.client.events(since=0))
    for job_id in [parent, *tasks]:
        mine = [e for e in events if e["job_id"] == job_id]
        terminal = [e for e in mine if e["kind"] == "job.state" and e["data"].get("state") in TERMINAL]
        reports = [e for e in mine if e["kind"] == "job.report"]
        assert len(terminal) == 1, (job_id, [e["data"] for e in terminal])
        assert len(reports) == 1, (job_id, len(reports))
        assert terminal[0]["data"]["state"] == gw.client.report(job_id)["state"] == state, job_id


def _array(gw: Any, runs: Path, size: int, sleep: str = "0.2") -> tuple[int, list[int]]:
    cmd = f"echo $FRONTDESK_ARRAY_TASK_ID >> '{runs}'; sleep {sleep}"
    parent = gw.client.submit(spec={"command": ["sh", "-c", cmd], "array": f"0-{size - 1}"})["id"]
    tasks = [t["id"] for t in gw.client.request("GET", f"/v1/jobs?array={parent}")]
    assert len(tasks) == size
    return parent, tasks


@pytest.mark.parametrize("point", ["after_report_built", "after_report_stored"])
def test_killed_at_the_arrays_own_end_it_ends_once(gateway_factory: Any, tmp_path: Path, point: str) -> None:
    gw = gateway_factory(env={"FRONTDESK_PLUGINS": "none", "FRONTDESK_FAULT": f"{point}:{TASKS + 1}"})
    runs = tmp_path / "runs"
    parent, tasks = _array(gw, runs, TASKS)
    _died(gw)
    gw.env.pop("FRONTDESK_FAULT")
    gw.start()
    _each_once(gw, parent, tasks, "COMPLETED")
    gw.kill9()  # a further restart tells nothing again
    gw.start()
    _each_once(gw, parent, tasks, "COMPLETED")
    assert Counter(runs.read_text().split()) == Counter(str(i) for i in range(TASKS))


def test_killed_mid_array_cancel_every_task_is_cancelled(gateway_factory: Any, tmp_path: Path) -> None:
    fault = {"FRONTDESK_PLUGINS": "none", "FRONTDESK_FAULT": "before_backend_cancel:3"}
    gw = gateway_factory(env=fault, config=f"[local]\ncpus = {TASKS}\n")
    marker = tmp_path / "ended"
    cmd = f"sleep 120; touch '{marker}'-$FRONTDESK_ARRAY_TASK_ID"
    parent = gw.client.submit(spec={"command": ["sh", "-c", cmd], "array": f"0-{TASKS - 1}"})["id"]
    tasks = [t["id"] for t in gw.client.request("GET", f"/v1/jobs?array={parent}")]
    for task in tasks:
        gw.wait_state(task, {"RUNNING"}, timeout=120)
    with contextlib.suppress(OSError, ValueError, IndexError):
        raw_request(gw.socket, "POST", f"/v1/jobs/{parent}/cancel", b"{}")
    _died(gw)
    gw.env.pop("FRONTDESK_FAULT")
    gw.start()
    _each_once(gw, parent, tasks, "CANCELLED")
    assert not list(tmp_path.glob("ended-*"))


def _hook(gw: Any, event: str, sid: str, budget: str) -> subprocess.CompletedProcess[str]:
    """The real Stop / asyncRewake hook, as Claude Code runs it."""
    payload = {"session_id": sid, "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp", "hook_event_name": "Stop"}
    argv = [sys.executable, "-m", "frontdesk.cli.main", "hook", event, "--harness", "claude-code", "--budget", budget]
    return subprocess.run(argv, env=gw.env, input=json.dumps(payload), capture_output=True, text=True, timeout=180)


@pytest.mark.parametrize("point", ["after_report_built", "after_report_stored"])
def test_killed_at_the_arrays_end_its_session_is_woken_once(gateway_factory: Any, workdir: Path, point: str) -> None:
    gw = gateway_factory(config=SESSION_CONFIG, env={"FRONTDESK_FAULT": f"{point}:{TASKS + 1}"})
    sid = str(uuid.uuid4())
    script = 'while [ ! -e gate ]; do sleep 0.05; done; echo "task $FRONTDESK_ARRAY_TASK_ID"'
    res = gw.cli(
        *("run", "--json", "--name", "k", "--array", f"0-{TASKS - 1}", "--", "sh", "-c", script),
        cwd=workdir,
        env={"CLAUDE_CODE_SESSION_ID": sid, "CLAUDECODE": "1"},
    )
    assert res.returncode == 0, res.stderr
    parent = json.loads(res.stdout)["id"]
    stop = _hook(gw, "stop", sid, "0")  # the turn ends with nothing to say yet
    assert (stop.returncode, stop.stdout) == (0, ""), stop.stderr
    (workdir / "gate").touch()
    _died(gw)
    gw.env.pop("FRONTDESK_FAULT")
    gw.start()
    woke = _hook(gw, "rewake", sid, "120")
    assert woke.returncode == 2 and f"frontdesk array {parent} (k): COMPLETED" in woke.stderr, woke.stderr
    assert _hook(gw, "rewake", sid, "0").returncode == 0  # told once
    gw.kill9()
    gw.start()
    assert _hook(gw, "rewake", sid, "0").returncode == 0  # and not again after a further restart
    events = list(gw.client.events(since=0))
    wakes = [e for e in events if e["kind"] == "session.wake" and e["session"] == sid]
    assert [w["data"]["jobs"] for w in wakes] == [[parent]]
    reports = [e for e in events if e["kind"] == "job.report" and e["job_id"] == parent]
    assert len(reports) == 1


def test_an_array_sent_again_after_a_kill_answers_as_an_array(gateway_factory: Any) -> None:
    """The client whose answer a kill cut off sends the request again: it gets the same array, in the same form."""
    gw = gateway_factory(env={"FRONTDESK_PLUGINS": "none"})
    blocker = gw.client.submit(spec={"command": ["sleep", "300"]})["id"]
    body = {
        "spec": {"command": ["true"], "array": "0-999%4", "depends_on": [blocker]},
        "context": {"request_id": uuid.uuid4().hex, "env": {}},
    }
    first = gw.client.request("POST", "/v1/jobs", body)
    gw.kill9()
    gw.start()
    again = gw.client.request("POST", "/v1/jobs", body)
    assert again["id"] == first["id"] and again["duplicate"] is True
    assert again["array"]["size"] == 1000 and again["array"]["max_running"] == 4, again.get("array")
    assert sum(again["array"]["counts"].values()) == 1000
    assert again["array"]["task_ids"] == first["array"]["task_ids"]
    assert len(gw.client.jobs(array=first["id"], limit=2000)) == 1000
    gw.client.cancel(blocker)
