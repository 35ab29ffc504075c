"""Job arrays on the Slurm lab: one `sbatch --array` for many tasks, each tracked as `<jobid>_<index>`."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from backend_helpers import make_job, run, started, until_ended
from frontdesk.backends.base import BackendJob, BackendStatus, JobState
from frontdesk.backends.slurm.parse import parse_scontrol_jobs
from frontdesk.config import Settings

pytestmark = pytest.mark.slurm


def tasks(settings: Settings, code: str, indices: list[int], **kw: Any) -> list[BackendJob]:
    """Tasks that differ in command (their index as an argument) and environment (SEED)."""
    out = []
    for i in indices:
        job = make_job(settings, [sys.executable, "-c", code, str(i)], **kw)
        env = {**job.env, "SEED": str(i * 7), "FRONTDESK_ARRAY_TASK_ID": str(i), "SLURM_ARRAY_TASK_ID": str(i)}
        out.append(dataclasses.replace(job, env=env, array_id=1000, array_index=i))
    return out


def test_one_sbatch_runs_every_task_with_its_own_command_env_output_and_usage(slurm_settings: Settings) -> None:
    code = (
        "import os,sys; x=bytearray(32*2**20); i=sys.argv[1]; "
        "print('task', i, os.environ['SEED'], os.environ['GREETING'], os.environ['SLURM_ARRAY_TASK_ID']); "
        "sys.exit(3 if i == '2' else 0)"
    )

    async def go() -> tuple[list[BackendJob], list[str], dict[str, BackendStatus], int]:
        b = await started(slurm_settings)
        jobs = tasks(slurm_settings, code, [0, 1, 2, 5], memory_bytes=256 * 2**20)
        before = b.runner.calls["sbatch"]
        ids = await b.submit_array(jobs, 2)
        calls = b.runner.calls["sbatch"] - before
        return jobs, ids, await until_ended(b, ids), calls

    jobs, ids, got, sbatch_calls = run(go())
    assert sbatch_calls == 1
    array = ids[0].split("_")[0]
    assert ids == [f"{array}_{i}" for i in (0, 1, 2, 5)]
    for job, bid in zip(jobs, ids, strict=True):
        st = got[bid]
        i = job.array_index
        assert st.backend_id == bid
        assert st.state is (JobState.FAILED if i == 2 else JobState.COMPLETED), st
        assert st.exit_code == (3 if i == 2 else 0)
        assert st.stdout_path == job.job_dir / "stdout"
        assert st.stdout_path.read_text() == f'task {i} {i * 7} it\'s "quoted" $HOME {i}\n'
        assert st.usage is not None and st.usage.cpu_seconds is not None
        if "task/cgroup" in Path(slurm_settings.section("slurm")["conf"]).read_text():  # the task's own cgroup
            assert st.usage.peak_rss_bytes and st.usage.peak_rss_bytes >= 32 * 2**20
    script = (jobs[0].job_dir / "array" / "sbatch.sh").read_text()
    assert script.count("#SBATCH --mem=256M") == 1 and "export SEED=35" in script


def test_cancel_one_task_then_the_whole_array(slurm_settings: Settings) -> None:
    async def go() -> tuple[list[str], dict[str, BackendStatus], dict[str, BackendStatus], BackendStatus]:
        b = await started(slurm_settings)
        ids = await b.submit_array(tasks(slurm_settings, "import time; time.sleep(300)", list(range(6))), 1)
        running = await b.query(ids)
        await b.cancel(ids[3])  # pending behind %1: Slurm forgets it at once
        restarted = (await (await started(slurm_settings)).query([ids[3]]))[ids[3]]  # knows it from disk
        await b.cancel(ids[0].split("_")[0])  # the whole array
        ended = await until_ended(b, ids)
        return ids, running, ended, restarted

    ids, running, ended, restarted = run(go())
    assert restarted.state is JobState.CANCELLED
    assert {st.state for st in running.values()} <= {JobState.PENDING, JobState.RUNNING}
    assert all(running[i].backend_id == i for i in ids)
    assert all(st.state is JobState.CANCELLED for st in ended.values()), ended


def test_a_restarted_gateway_finds_every_task_by_its_key(slurm_settings: Settings) -> None:
    async def go() -> tuple[list[BackendJob], list[str], dict[str, str]]:
        b = await started(slurm_settings)
        jobs = tasks(slurm_settings, "import time; time.sleep(300)", [0, 4, 9])
        ids = await b.submit_array(jobs, None)
        fresh = await started(slurm_settings)  # knows nothing but the controller and its home
        found = await fresh.lookup([j.key for j in jobs] + ["fd-999999.1"])
        await b.cancel(ids[0].split("_")[0])
        await until_ended(b, ids)
        return jobs, ids, found

    jobs, ids, found = run(go())
    assert found == {job.key: bid for job, bid in zip(jobs, ids, strict=True)}


def test_tasks_that_ask_different_resources_are_refused_before_sbatch(slurm_settings: Settings) -> None:
    from frontdesk.errors import BackendError

    async def go() -> int:
        b = await started(slurm_settings)
        jobs = tasks(slurm_settings, "pass", [0, 1])
        jobs[1] = dataclasses.replace(jobs[1], cpus=2)
        before = b.runner.calls["sbatch"]
        with pytest.raises(BackendError, match="same resources"):
            await b.submit_array(jobs, None)
        return b.runner.calls["sbatch"] - before

    assert run(go()) == 0


# -- through a real gateway, the real CLI, the real hook and the shims ---------------------------------------

CANARY = "mkfs.ext4 -n /dev/loop987654"
"""Refused by the guard's disk.wipe rule like a real wipe; a dry run on a device that does not exist."""


@pytest.fixture
def lab_gw(slurm_lab: Path, gateway_factory: Any, tmp_path: Path) -> Any:
    """A gateway on the lab (guard, agents, slurm plug-ins) and its shims installed in tmp/shims."""
    config = (
        '[gateway]\nbackend = "slurm"\ntick_seconds = 1.0\n\n'
        "[agents]\nbatch_window_s = 0.5\nlease_s = 5\n\n"
        '[slurm]\nrefresh_seconds = 1.0\npartition = "test"\n'
    )
    gw = gateway_factory(config=config, env={"SLURM_CONF": str(slurm_lab / "etc" / "slurm.conf")})
    assert gw.cli("shim", "install", str(tmp_path / "shims")).returncode == 0
    sentinel = tmp_path / "real-sbatch-ran"
    fake_real = tmp_path / "fake-real-sbatch"
    fake_real.write_text(f"#!/bin/sh\necho \"$@\" >> '{sentinel}'\nexit 0\n")
    fake_real.chmod(0o755)
    gw.shim_env = {
        **gw.env,
        "PATH": f"{tmp_path / 'shims'}:{os.environ['PATH']}",
        "FRONTDESK_REAL_SBATCH": str(fake_real),
    }
    return gw


def _shim(gw: Any, *argv: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(argv), env={**gw.shim_env, **(env or {})}, capture_output=True, text=True, timeout=120, cwd=cwd
    )


def _sbatch_calls(gw: Any) -> int:
    return int(gw.client.request("GET", "/v1/cluster")["slurm"]["controller_commands"].get("sbatch", 0))


def _tasks(gw: Any, array_id: int) -> list[dict[str, Any]]:
    return sorted(gw.client.jobs(array=array_id, limit=1000), key=lambda t: t["array_index"])


def _hook(gw: Any, sid: str, event: str, budget: str = "10") -> subprocess.CompletedProcess[str]:
    """The real Claude Code hook: `session-start` (the session is idle), `rewake` (the background hook)."""
    payload = {
        "session_id": sid,
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/tmp",
        "hook_event_name": "SessionStart" if event == "session-start" else "Stop",
        "source": "startup",
        "stop_hook_active": False,
        "last_assistant_message": "submitted the sweep",
        "background_tasks": [],
    }
    argv = [sys.executable, "-m", "frontdesk.cli.main", "hook", event, "--harness", "claude-code"]
    return subprocess.run(
        [*argv, "--budget", budget], env=gw.env, input=json.dumps(payload), capture_output=True, text=True, timeout=200
    )


def test_an_array_through_the_gateway_is_one_sbatch_one_report_one_wake(lab_gw: Any, workdir: Path) -> None:
    gw, sid = lab_gw, str(uuid.uuid4())
    assert _hook(gw, sid, "session-start").returncode == 0
    before = _sbatch_calls(gw)
    script = 'echo "task $SLURM_ARRAY_TASK_ID lr=$FD_SWEEP_LR"; echo "loss={lr}"; [ {lr} != 3 ]'
    res = gw.cli(
        *("run", "--json", "--name", "lab-sweep", "--sweep", "lr=1,2,3,4", "--", "sh", "-c", script),
        cwd=workdir,
        env={"CLAUDE_CODE_SESSION_ID": sid, "CLAUDECODE": "1"},
    )
    assert res.returncode == 0, res.stderr
    array_id = json.loads(res.stdout)["id"]
    woke = _hook(gw, sid, "rewake", "150")
    assert woke.returncode == 2, woke.stderr
    assert f"frontdesk array {array_id} (lab-sweep): FAILED: 4 tasks, 3 COMPLETED, 1 FAILED" in woke.stderr
    assert "best by loss (lower is better): task 0 loss=1" in woke.stderr
    assert _hook(gw, sid, "rewake", "0").returncode == 0  # one wake: the tasks' reports are never told on their own
    assert _sbatch_calls(gw) - before == 1
    tasks = _tasks(gw, array_id)
    slurm_array = tasks[0]["backend_id"].split("_")[0]
    assert [t["backend_id"] for t in tasks] == [f"{slurm_array}_{i}" for i in range(4)]
    assert [t["state"] for t in tasks] == ["COMPLETED", "COMPLETED", "FAILED", "COMPLETED"]
    assert gw.client.logs(tasks[1]["id"])["lines"] == ["task 1 lr=2", "loss=2"]
    events = list(gw.client.events(since=0))
    wakes = [e for e in events if e["kind"] == "session.wake" and e["session"] == sid]
    assert [w["data"]["jobs"] for w in wakes] == [[array_id]]


def test_sbatch_array_through_the_shim_is_tracked_throttled_and_reported(lab_gw: Any, tmp_path: Path) -> None:
    gw = lab_gw
    script = tmp_path / "task.sh"
    script.write_text('#!/bin/bash\n#SBATCH -J shim-array\necho "task $SLURM_ARRAY_TASK_ID"\nsleep 1\n')
    before = _sbatch_calls(gw)
    out = _shim(gw, "sbatch", "--array=0-3%2", "-p", "test", str(script), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    slurm_array = out.stdout.split()[-1]
    assert out.stdout == f"Submitted batch job {slurm_array}\n" and slurm_array.isdigit()
    assert not (tmp_path / "real-sbatch-ran").exists()
    record = parse_scontrol_jobs(
        subprocess.run(["scontrol", "-o", "show", "job", slurm_array], capture_output=True, text=True).stdout
    )
    assert record and all(r.get("ArrayJobId") == slurm_array for r in record)
    assert {r.get("ArrayTaskThrottle") for r in record} == {"2"}
    parent = next(j for j in gw.client.jobs(limit=20) if j.get("array"))
    assert parent["name"] == "shim-array" and parent["array"]["size"] == 4
    done = gw.client.wait([parent["id"]], "all", 150)
    assert done["done"], done
    report = done["reports"][0]
    assert report["state"] == "COMPLETED"
    tasks = _tasks(gw, parent["id"])
    assert [t["backend_id"] for t in tasks] == [f"{slurm_array}_{i}" for i in range(4)]
    assert all(t["state"] == "COMPLETED" for t in tasks)
    for i in range(4):  # sbatch's default output name for an array task
        assert (tmp_path / f"slurm-{slurm_array}_{i}.out").read_text() == f"task {i}\n"
    assert _sbatch_calls(gw) - before == 1
    time.sleep(1.5)  # the shim's view is at most refresh_seconds (1 s) old: let it catch up, then compare
    fmt = ("-h", "-t", "all", "-j", slurm_array, "-o", "%i %T %j")
    real = subprocess.run(["squeue", *fmt], capture_output=True, text=True, env=gw.env)
    shim = _shim(gw, "squeue", *fmt, cwd=tmp_path)
    assert shim.returncode == real.returncode == 0, shim.stderr
    assert sorted(shim.stdout.splitlines()) == sorted(real.stdout.splitlines())
    assert f"{slurm_array}_3 COMPLETED shim-array" in shim.stdout
    acct = _shim(gw, "sacct", "-n", "-X", "-P", "-j", slurm_array, "-o", "JobID,State,MaxRSS", cwd=tmp_path)
    assert acct.returncode == 0, acct.stderr  # the lab keeps no accounting: the shim answers from frontdesk
    rows = [line.split("|") for line in acct.stdout.splitlines()]
    assert [r[:2] for r in rows] == [[f"{slurm_array}_{i}", "COMPLETED"] for i in range(4)]


def test_cancel_one_task_then_the_array(lab_gw: Any, workdir: Path) -> None:
    gw = lab_gw
    res = gw.cli("run", "--json", "--array", "0-5%2", "--", "sleep", "300", cwd=workdir)
    assert res.returncode == 0, res.stderr
    array_id = json.loads(res.stdout)["id"]
    tasks = _until(gw, array_id, lambda ts: all(t["backend_id"] for t in ts) and ts[0]["state"] == "RUNNING")
    slurm_array = tasks[0]["backend_id"].split("_")[0]
    one = gw.cli("cancel", f"{array_id}_4")  # pending behind %2: Slurm forgets such a task at once
    assert one.returncode == 0, one.stderr
    tasks = _until(gw, array_id, lambda ts: ts[4]["state"] == "CANCELLED")
    assert [t["state"] for t in tasks if t["array_index"] != 4] != ["CANCELLED"] * 5
    never = workdir / "real-scancel-ran"
    fake = {"FRONTDESK_REAL_SCANCEL": str(_sentinel_command(workdir / "fake-scancel", never))}
    killed = _shim(gw, "scancel", f"{slurm_array}_0", cwd=workdir, env=fake)  # a task by its Slurm id
    assert killed.returncode == 0, killed.stderr
    _until(gw, array_id, lambda ts: ts[0]["state"] == "CANCELLED")
    whole = _shim(gw, "scancel", slurm_array, cwd=workdir, env=fake)  # the whole array by its Slurm id
    assert whole.returncode == 0, whole.stderr
    assert not never.exists()  # both went through the gateway (recorded as cancelled there), not around it
    done = gw.client.wait([array_id], "all", 120)
    assert done["done"] and done["reports"][0]["state"] == "CANCELLED", done
    assert all(t["state"] == "CANCELLED" for t in _tasks(gw, array_id))
    left = subprocess.run(["squeue", "-h", "-j", slurm_array], capture_output=True, text=True).stdout
    assert left.strip() == ""


@pytest.mark.parametrize(
    ("argv", "env"),
    [
        (["--array=0-3", "--wrap", CANARY], {}),
        (["-a", "0-1", "--mail-type=END", "--wrap", f"echo ok; {CANARY}"], {}),
        (["--wrap", CANARY], {"SBATCH_ARRAY_INX": "0-3%2"}),
    ],
)
def test_array_submissions_pass_the_guard(lab_gw: Any, tmp_path: Path, argv: list[str], env: dict[str, str]) -> None:
    out = _shim(lab_gw, "sbatch", *argv, cwd=tmp_path, env=env)
    assert out.returncode != 0 and "Submitted" not in out.stdout, out
    assert "guard [disk.wipe]" in out.stderr, out.stderr
    assert not (tmp_path / "real-sbatch-ran").exists()
    assert lab_gw.client.jobs(limit=5) == []


def test_unknown_options_with_an_array_fail_like_sbatch(lab_gw: Any, tmp_path: Path) -> None:
    out = _shim(lab_gw, "sbatch", "--array=0-3", "--no-such-option", "--wrap", CANARY, cwd=tmp_path)
    assert out.returncode == 255 and "unrecognized option '--no-such-option'" in out.stderr
    bad = _shim(lab_gw, "sbatch", "--array=3-1", "--wrap", "true", cwd=tmp_path)
    assert bad.returncode == 1 and "Invalid job array specification" in bad.stderr
    assert not (tmp_path / "real-sbatch-ran").exists()
    assert lab_gw.client.jobs(limit=5) == []


def _sentinel_command(path: Path, marker: Path) -> Path:
    path.write_text(f"#!/bin/sh\necho \"$@\" >> '{marker}'\nexit 0\n")
    path.chmod(0o755)
    return path


def _until(gw: Any, array_id: int, ok: Any, timeout: float = 120) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        tasks = _tasks(gw, array_id)
        if tasks and ok(tasks):
            return tasks
        assert time.monotonic() < deadline, tasks
        time.sleep(0.3)


def test_squeue_shim_shows_array_tasks_as_slurm_does(lab_gw: Any, tmp_path: Path) -> None:
    """`-r`, `-j 77_3` on a folded pending task, several task ids, an unknown task: byte for byte."""
    gw = lab_gw
    out = _shim(gw, "sbatch", "--array=0-5%2", "-p", "test", "-J", "diff-r", "--wrap", "sleep 120", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    a = out.stdout.split()[-1]
    deadline = time.monotonic() + 60
    while (
        "R" not in subprocess.run(["squeue", "-h", "-j", f"{a}_0", "-o", "%t"], capture_output=True, text=True).stdout
    ):
        assert time.monotonic() < deadline
        time.sleep(0.3)
    time.sleep(1.5)  # the view is at most refresh_seconds old
    fmt = ["-o", "%i %K %F %T %j %r"]
    try:
        for argv in (
            ["-r", "-j", a, *fmt],
            ["-j", a, *fmt],
            ["-j", f"{a}_4", *fmt],
            ["-j", f"{a}_4,{a}_0", *fmt],
            ["-j", f"{a}_9", *fmt],
            ["-r", "-h", "-n", "diff-r", *fmt],
        ):
            real = subprocess.run(["squeue", *argv], capture_output=True, text=True, env=gw.env)
            shim = _shim(gw, "squeue", *argv, cwd=tmp_path)
            assert (shim.returncode, shim.stderr) == (real.returncode, real.stderr), argv
            # squeue's order among equal sort keys (two running tasks) is not stable from call to call
            assert sorted(shim.stdout.splitlines()) == sorted(real.stdout.splitlines()), argv
            pending = [line for line in real.stdout.splitlines() if "PENDING" in line]
            assert [line for line in shim.stdout.splitlines() if "PENDING" in line] == pending, argv
    finally:
        subprocess.run(["scancel", a], capture_output=True)


TEST_USER = "fdslurm1"
"""The same user tests/slurm/test_slurm_backend.py uses (tests/unix_users.py)."""


def test_a_root_gateway_runs_an_array_as_its_submitter(slurm_settings: Settings) -> None:
    import shutil
    import tempfile

    from unix_users import ensure_user

    if os.geteuid() != 0:
        pytest.skip("needs a root gateway")
    pw = ensure_user(TEST_USER)
    work = Path(tempfile.mkdtemp(prefix="fd user work ", dir="/tmp"))  # pytest's tmp is root's 0700
    os.chown(work, pw.pw_uid, pw.pw_gid)
    code = "import os,sys; print(os.getuid(), sys.argv[1], os.environ['SEED'])"

    async def go() -> tuple[list[BackendJob], dict[str, BackendStatus]]:
        b = await started(slurm_settings)
        made = tasks(slurm_settings, code, [0, 3], workdir=work)
        # the venv's python lives under root's 0700 home: the user runs the system's
        jobs = [dataclasses.replace(j, uid=pw.pw_uid, argv=["/usr/bin/python3", *j.argv[1:]]) for j in made]
        ids = await b.submit_array(jobs, None)
        return jobs, await until_ended(b, ids)

    try:
        jobs, got = run(go())
        assert all(st.state is JobState.COMPLETED for st in got.values()), got
        for job, st in zip(jobs, got.values(), strict=True):
            i = job.array_index
            out = work / f"{jobs[0].key}_{i}.out"  # the job's user cannot reach the gateway's 0700 job dirs
            assert out.read_text() == f"{pw.pw_uid} {i} {i * 7}\n"
            assert out.stat().st_uid == pw.pw_uid
            assert st.stdout_path == out
    finally:
        shutil.rmtree(work)
