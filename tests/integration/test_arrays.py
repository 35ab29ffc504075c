"""Job arrays and sweeps on the embedded backend, through a real gateway, the real CLI and the real hook.

One report and one wake per array; `%N` observed through files the tasks write; afterok on a whole array
and aftercorr task by task; cancel of one task (`ID_INDEX`) and of the array; the batch endpoint.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from frontdesk.errors import SpecError
from golden_helpers import check_shape

PY = sys.executable
CONFIG = "[agents]\nbatch_window_s = 0.5\nlease_s = 5\n"


@pytest.fixture
def gw(gateway_factory: Any) -> Any:
    return gateway_factory(config=CONFIG)


def _run(gw: Any, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> dict[str, Any]:
    res = gw.cli("run", "--json", *args, cwd=cwd, env=env)
    assert res.returncode == 0, res.stderr
    out: dict[str, Any] = json.loads(res.stdout)
    return out


def _wait(gw: Any, job_id: int) -> dict[str, Any]:
    res = gw.client.wait([job_id], "all", 120)
    assert res["done"], res
    rep: dict[str, Any] = res["reports"][0]
    return rep


def _tasks(gw: Any, array_id: int) -> list[dict[str, Any]]:
    tasks: list[dict[str, Any]] = gw.client.jobs(array=array_id, limit=1000)
    return sorted(tasks, key=lambda t: t["array_index"])


def _hook(gw: Any, event: str, sid: str, budget: str) -> subprocess.CompletedProcess[str]:
    """The real Stop / asyncRewake hook, as Claude Code runs it."""
    payload = {
        "session_id": sid,
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/tmp",
        "hook_event_name": "Stop",
        "stop_hook_active": False,
        "last_assistant_message": "submitted the sweep",
        "background_tasks": [],
    }
    argv = [PY, "-m", "frontdesk.cli.main", "hook", event, "--harness", "claude-code", "--budget", budget]
    return subprocess.run(argv, env=gw.env, input=json.dumps(payload), capture_output=True, text=True, timeout=180)


def test_a_sweep_wakes_its_session_once_with_one_report(gw: Any, workdir: Path) -> None:
    sid = str(uuid.uuid4())
    gate = workdir / "gate"  # the tasks end only after the Stop hook ran (it must find nothing to say yet)
    script = (
        "while [ ! -e gate ]; do sleep 0.05; done; "
        'echo "task $SLURM_ARRAY_TASK_ID of $FRONTDESK_ARRAY_JOB_ID lr=$FD_SWEEP_LR"; echo "loss={lr}"; [ {lr} != 3 ]'
    )
    job = _run(
        gw,
        *("--name", "lr-sweep", "--sweep", "lr=1,2,3,4"),
        *("--", "sh", "-c", script),
        cwd=workdir,
        env={"CLAUDE_CODE_SESSION_ID": sid, "CLAUDECODE": "1"},
    )
    array_id = job["id"]
    assert job["array"]["size"] == 4 and job["session"] == sid
    stop = _hook(gw, "stop", sid, "0")  # the turn ends without waiting; the background hook stays
    assert (stop.returncode, stop.stdout) == (0, ""), stop.stderr
    gate.touch()
    woke = _hook(gw, "rewake", sid, "120")
    assert woke.returncode == 2, woke.stderr
    assert f"frontdesk array {array_id} (lr-sweep): FAILED: 4 tasks, 3 COMPLETED, 1 FAILED" in woke.stderr
    assert "failed: " in woke.stderr and "(tasks 2)" in woke.stderr
    assert "best by loss (lower is better): task 0 loss=1" in woke.stderr
    # nothing else comes: the tasks' own reports are in the journal but never delivered on their own
    assert _hook(gw, "rewake", sid, "0").returncode == 0
    events = list(gw.client.events(since=0))
    wakes = [e for e in events if e["kind"] == "session.wake" and e["session"] == sid]
    assert [(w["data"]["jobs"], w["data"]["ok"]) for w in wakes] == [([array_id], True)]
    reports = [e for e in events if e["kind"] == "job.report"]
    task_ids = {t["id"] for t in _tasks(gw, array_id)}
    assert sorted(e["job_id"] for e in reports) == sorted([*task_ids, array_id])
    assert [e["job_id"] for e in reports if e["data"]["report"].get("array_id") is None] == [array_id]
    # each task ran its own point of the sweep, with the array variables set
    for task in _tasks(gw, array_id):
        i = task["array_index"]
        out = gw.client.logs(task["id"])["lines"]
        assert out == [f"task {i} of {array_id} lr={i + 1}", f"loss={i + 1}"]


def test_the_percent_limit_keeps_at_most_two_tasks_running(gw: Any, workdir: Path) -> None:
    code = (
        "import os, sys, time; i = os.environ['FRONTDESK_ARRAY_TASK_ID']; "
        "open(f'start.{i}', 'w').write(str(time.time_ns())); time.sleep(0.4); "
        "open(f'end.{i}', 'w').write(str(time.time_ns()))"
    )
    job = _run(gw, "--array", "0-5%2", "--", PY, "-c", code, cwd=workdir)
    assert job["array"]["max_running"] == 2
    rep = _wait(gw, job["id"])
    assert rep["state"] == "COMPLETED", rep["text"]
    spans = [(int((workdir / f"start.{i}").read_text()), int((workdir / f"end.{i}").read_text())) for i in range(6)]
    edges = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans], key=lambda p: (p[0], p[1]))
    running = most = 0
    for _, delta in edges:
        running += delta
        most = max(most, running)
    assert most <= 2, spans
    jobs = gw.cli("jobs")
    assert jobs.returncode == 0, jobs.stderr
    line = [ln for ln in jobs.stdout.splitlines() if ln.split()[0] == str(job["id"])]
    assert line and "array of 6 %2: 6 COMPLETED" in line[0]
    assert len(jobs.stdout.splitlines()) == 2  # the header and the array: its tasks are not listed one by one


def test_afterok_waits_for_every_task_and_aftercorr_pairs_tasks(gw: Any, workdir: Path) -> None:
    first = _run(
        gw,
        "--name",
        "prep",
        "--array",
        "0-2",
        "--",
        "sh",
        "-c",
        'touch "a.$FRONTDESK_ARRAY_TASK_ID"; exit $(( $FRONTDESK_ARRAY_TASK_ID == 1 ))',
        cwd=workdir,
    )
    pairs = _run(
        gw,
        "--array",
        "0-2",
        "--aftercorr",
        "prep",
        "--",
        "sh",
        "-c",
        'test -e "a.$FRONTDESK_ARRAY_TASK_ID"',
        cwd=workdir,
    )
    after_all = _run(gw, "--after", str(first["id"]), "--", "true", cwd=workdir)
    assert _wait(gw, first["id"])["state"] == "FAILED"
    assert _wait(gw, pairs["id"])["state"] == "FAILED"
    states = {t["array_index"]: t["state"] for t in _tasks(gw, pairs["id"])}
    assert states == {0: "COMPLETED", 1: "DEPENDENCY_NEVER_SATISFIED", 2: "COMPLETED"}
    prep_tasks = _tasks(gw, first["id"])
    for task, dep in zip(_tasks(gw, pairs["id"]), prep_tasks, strict=True):
        assert task["spec"]["depends_on"] == [dep["id"]]  # task i waits on task i only
    assert _wait(gw, after_all["id"])["state"] == "DEPENDENCY_NEVER_SATISFIED"
    # every task completed: the job after the array runs, once all of them ended
    ok = _run(gw, "--array", "0-2", "--", "sh", "-c", 'sleep 0.3; touch "b.$FRONTDESK_ARRAY_TASK_ID"', cwd=workdir)
    last = _run(
        gw, "--after", str(ok["id"]), "--", "sh", "-c", "test -e b.0 && test -e b.1 && test -e b.2", cwd=workdir
    )
    assert _wait(gw, last["id"])["state"] == "COMPLETED"


def test_cancel_one_task_then_the_whole_array(gw: Any, workdir: Path) -> None:
    job = _run(gw, "--array", "0-2", "--", "sleep", "120", cwd=workdir)
    array_id = job["id"]
    tasks = _tasks(gw, array_id)
    for task in tasks[:2]:  # two run on this 2-core host; task 2 waits for a core
        gw.wait_state(task["id"], {"RUNNING"})
    res = gw.cli("cancel", f"{array_id}_1", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)[0]["id"] == tasks[1]["id"]
    assert gw.wait_state(tasks[1]["id"], {"CANCELLED"})["array_index"] == 1
    assert gw.client.job(tasks[0]["id"])["state"] == "RUNNING"
    assert gw.client.job(array_id)["state"] == "RUNNING"
    res = gw.cli("cancel", str(array_id))
    assert res.returncode == 0, res.stderr
    rep = _wait(gw, array_id)
    assert rep["state"] == "CANCELLED"
    assert {t["state"] for t in _tasks(gw, array_id)} == {"CANCELLED"}
    assert rep["array"]["counts"] == {"CANCELLED": 3}
    status = gw.cli("status", str(array_id), "--tasks")
    assert [ln.split()[0] for ln in status.stdout.splitlines()[1:]] == [f"{array_id}_{i}" for i in range(3)]
    bad = gw.cli("cancel", f"{array_id}_9")
    assert bad.returncode != 0 and bad.stderr.strip() == f"frontdesk: no task 9 in job {array_id}"


def test_bad_arrays_are_refused_on_one_line(gw: Any) -> None:
    for args, said in [
        (("--array", "5-1"), "array: range '5-1' ends before it starts"),
        (("--array", "0-20000"), "more than 10000 tasks"),
        (("--sweep", "lr"), "--sweep expects NAME=V1,V2"),
        (("--array", "0-1", "--aftercorr", "999999"), "aftercorr: no array 999999"),
    ]:
        res = gw.cli("run", *args, "--", "true")
        assert res.returncode != 0
        assert said in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert gw.client.jobs() == []


def test_a_batch_is_stored_whole_or_not_at_all(gw: Any, workdir: Path) -> None:
    ctx = {"cwd": str(workdir)}
    items = [{"spec": {"command": ["true"], "idempotency_key": "b-1"}}, {"spec_text": "command: ['false']\n"}]
    with pytest.raises(SpecError, match=r"^jobs\[2\]: spec: command: "):
        gw.client.request("POST", "/v1/jobs/batch", {"jobs": [*items, {"spec": {"command": 5}}], "context": ctx})
    assert gw.client.jobs() == []  # nothing stored of a refused batch
    got = gw.client.request("POST", "/v1/jobs/batch", {"jobs": items, "context": ctx})["jobs"]
    assert [j["spec"]["command"] for j in got] == [["true"], ["false"]]
    assert [_wait(gw, j["id"])["state"] for j in got] == ["COMPLETED", "FAILED"]
    again = gw.client.request("POST", "/v1/jobs/batch", {"jobs": items[:1], "context": ctx})["jobs"]
    assert again[0]["id"] == got[0]["id"] and again[0]["duplicate"] is True


def test_first_failure_tells_the_array_early_and_only_once(gw: Any, workdir: Path) -> None:
    sid = str(uuid.uuid4())
    script = '[ "$FRONTDESK_ARRAY_TASK_ID" = 0 ] && exit 3; sleep 1; echo "acc=0.$FRONTDESK_ARRAY_TASK_ID"'
    job = _run(
        gw,
        *("--array", "0-2", "--array-report", "first_failure", "--", "sh", "-c", script),
        cwd=workdir,
        env={"CLAUDE_CODE_SESSION_ID": sid, "CLAUDECODE": "1"},
    )
    final = _wait(gw, job["id"])
    assert final["state"] == "FAILED" and final["array"]["early"] is False
    told = [e for e in gw.client.events(since=0, job=job["id"]) if e["kind"] == "job.report"]
    assert [e["data"]["report"]["array"]["early"] for e in told] == [True, False]
    early = told[0]["data"]["report"]
    assert "first failure, others still running" in early["text"] and early["array"]["counts"]["FAILED"] == 1
    session = gw.client.request("GET", f"/v1/sessions/{sid}")
    assert session["unread"] == 1  # the early report is the array's one report for the session


def test_retry_runs_again_only_the_tasks_that_did_not_complete(gw: Any, workdir: Path) -> None:
    script = 'i=$FRONTDESK_ARRAY_TASK_ID; [ $((i % 2)) = 1 ] && [ ! -e fixed ] && exit 1; echo "ran {seed}" >> "ran.$i"'
    job = _run(gw, "--sweep", "seed=10,11,12,13", "--array", "0-3%3", "--", "sh", "-c", script, cwd=workdir)
    assert _wait(gw, job["id"])["array"]["counts"] == {"COMPLETED": 2, "FAILED": 2}
    early = gw.cli("retry", f"{job['id']}_1", cwd=workdir)
    (workdir / "fixed").touch()
    res = gw.cli("retry", str(job["id"]), "--wait", "--json", cwd=workdir)
    assert res.returncode == 0, res.stderr
    again = json.loads(res.stdout)["job"]
    assert again["spec"]["array"] == "1,3%3" and again["array"]["size"] == 2
    assert [t["array_index"] for t in _tasks(gw, again["id"])] == [1, 3]
    assert {t["state"] for t in _tasks(gw, again["id"])} == {"COMPLETED"}
    assert (workdir / "ran.3").read_text() == "ran 13\n"  # task 3 keeps its sweep point
    assert early.returncode == 0, early.stderr  # one task retried alone: a plain job
    single = gw.client.job(int(early.stdout.strip()))
    assert single.get("array") is None and single["spec"]["env"]["FD_SWEEP_SEED"] == "11"
    assert single["spec"]["env"]["FRONTDESK_ARRAY_TASK_ID"] == "1"  # the task's index travels with it
    gw.wait_state(single["id"], {"FAILED", "COMPLETED"})
    assert not (workdir / "ran.").exists()
    nothing = gw.cli("retry", str(again["id"]))
    assert nothing.returncode != 0 and "nothing to retry" in nothing.stderr


def test_an_array_survives_a_kill9_and_ends_once(gw: Any, workdir: Path) -> None:
    gate = workdir / "gate"
    script = f'echo "$FRONTDESK_ARRAY_TASK_ID" >> runs; while [ ! -e "{gate}" ]; do sleep 0.05; done; echo acc=0.5'
    job = _run(gw, "--array", "0-3%2", "--", "sh", "-c", script, cwd=workdir)
    tasks = _tasks(gw, job["id"])
    for task in tasks[:2]:
        gw.wait_state(task["id"], {"RUNNING"})
    gw.kill9()
    gate.touch()  # the two running tasks end while the gateway is down; two more wait for their turn
    gw.start()
    rep = _wait(gw, job["id"])
    assert rep["state"] == "COMPLETED" and rep["array"]["counts"] == {"COMPLETED": 4}
    assert sorted((workdir / "runs").read_text().split()) == ["0", "1", "2", "3"], "a task ran twice or not at all"
    told = [e for e in gw.client.events(since=0, job=job["id"]) if e["kind"] == "job.report"]
    assert len(told) == 1


def test_array_json_forms_are_pinned(gw: Any, workdir: Path) -> None:
    golden = Path(__file__).parents[1] / "golden" / "cli"
    job = _run(
        gw, "--name", "g", "--sweep", "lr=1,2", "--", "sh", "-c", "echo loss={lr}; exit $(({lr} - 1))", cwd=workdir
    )
    waited = json.loads(gw.cli("wait", str(job["id"]), "--json").stdout)
    task = json.loads(gw.cli("status", f"{job['id']}_1", "--json").stdout)
    listed = json.loads(gw.cli("jobs", "--json").stdout)
    for name, data in [("array-run", job), ("array-wait", waited), ("array-task", task), ("array-jobs", listed)]:
        check_shape(golden / f"{name}.json", data)
