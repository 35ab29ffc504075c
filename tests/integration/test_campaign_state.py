"""Campaign state through a real gateway (issue 18): checkpoints from hooks survive kill -9, submissions from a
session get keys from its turn (a replayed turn returns its jobs; new turns and repeats make new ones), and the
CLI shows, plans and lists campaigns."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from golden_helpers import check_shape
from unix_users import reachable

HOST = os.uname().nodename
GOLDEN = Path(__file__).parents[1] / "golden" / "agents"


def _golden_shape(name: str, data: Any) -> None:
    check_shape(GOLDEN / f"{name}.json", data)


def _hook(gw: Any, sid: str, event: str, cwd: Path, **extra: Any) -> Any:
    body = {"event": event, "harness": "claude-code", "cwd": str(cwd), "reach": {"host": HOST}, **extra}
    return gw.client.request("POST", f"/v1/sessions/{sid}/hook", body)


def _run(gw: Any, sid: str, cwd: Path, marker: Path) -> dict[str, Any]:
    env = {"CLAUDE_CODE_SESSION_ID": sid, "CLAUDECODE": "1"}
    res = gw.cli("run", "--json", "--", "sh", "-c", f"echo ran >> {marker}", env=env, cwd=cwd)
    assert res.returncode == 0, res.stderr
    job: dict[str, Any] = json.loads(res.stdout)
    return job


def test_turn_keys_and_checkpoints_survive_a_gateway_kill(gateway_factory: Any, tmp_path: Path) -> None:
    gw = gateway_factory(config="[agents]\nbatch_window_s = 0.2\n")
    sid, proj, marker = "camp-1", tmp_path / "proj", tmp_path / "runs.txt"
    proj.mkdir()
    _hook(gw, sid, "SessionStart", proj)
    _hook(gw, sid, "UserPromptSubmit", proj, plan=[{"text": "train", "status": "in_progress"}], plan_source="TodoWrite")
    a, b = _run(gw, sid, proj, marker), _run(gw, sid, proj, marker)
    assert a["id"] != b["id"]  # the same command twice in one turn: two jobs
    _hook(gw, sid, "UserPromptSubmit", proj)
    c = _run(gw, sid, proj, marker)
    assert c["id"] not in (a["id"], b["id"])  # the next turn: a new job
    for job in (a, b, c):
        gw.wait_state(job["id"], {"COMPLETED"})
    plain = [gw.cli("run", "--json", "--", "true", env={"CLAUDE_CODE_SESSION_ID": "", "CLAUDECODE": ""}) for _ in "ab"]
    assert len({json.loads(p.stdout)["id"] for p in plain}) == 2  # not from a session: unchanged
    gw.kill9()  # mid-campaign: turn 2 never ended
    gw.start()
    camp = json.loads(gw.cli("sessions", "show", sid, "--json").stdout)
    assert (camp["turn"], camp["turn_state"], camp["host"]) == (2, "in_turn", HOST)
    assert camp["plan"] == [{"text": "train", "status": "in_progress"}] and camp["plan_source"] == "TodoWrite"
    assert [j["id"] for j in camp["jobs"]] == [a["id"], b["id"], c["id"]]
    keys = [j["idempotency_key"] for j in camp["jobs"]]
    assert keys[0].startswith(f"session:{sid}:turn1:") and keys[0].endswith(":0") and keys[1].endswith(":1")
    assert keys[2].startswith(f"session:{sid}:turn2:") and "3 completed" in camp["summary"]
    dry = gw.cli("sessions", "resume", sid, "--dry-run", "--json", "--dir", str(tmp_path / "copy"))
    plan = json.loads(dry.stdout)
    assert plan["argv"][:3] == ["claude", "--resume", sid] and plan["cwd"] == str(tmp_path / "copy")
    assert plan["continues_turn"] and "Campaign summary" in plan["prompt"]
    _golden_shape("campaign_show", camp)
    _golden_shape("campaign_resume", plan)
    body = {"dir": str(proj), "headless": True, "commit": True}
    gw.client.request("POST", f"/v1/sessions/{sid}/campaign/resume", body)  # what `resume` records before exec
    _hook(gw, sid, "UserPromptSubmit", proj)  # the resume's prompt continues turn 2
    again = _run(gw, sid, proj, marker)
    assert again["id"] == c["id"] and again.get("duplicate")  # the replayed submission: the same job
    fresh = _run(gw, sid, proj, marker)
    assert fresh["id"] not in (a["id"], b["id"], c["id"])  # a second one in the replayed turn: new
    gw.wait_state(fresh["id"], {"COMPLETED"})
    assert marker.read_text().count("ran") == 4  # a, b, c, fresh: nothing ran twice
    assert json.loads(gw.cli("sessions", "show", sid, "--json").stdout)["incarnation"] == 1


def test_sessions_by_node_and_ssh_resume(gateway_factory: Any, tmp_path: Path) -> None:
    gw = gateway_factory()
    _hook(gw, "here-1", "SessionStart", tmp_path)
    gw.client.request(
        "POST", "/v1/sessions/far-1/hook", {"event": "SessionStart", "harness": "codex", "reach": {"host": "login9"}}
    )
    on_node = json.loads(gw.cli("sessions", "list", "--node", "login9", "--json").stdout)
    assert [r["id"] for r in on_node] == ["far-1"]
    assert json.loads(gw.cli("sessions", "list", "--node", "nowhere", "--json").stdout) == []
    bad_host = gw.cli("sessions", "resume", "here-1", "--on=-oProxyCommand=x")
    assert bad_host.returncode != 0 and "not a host name" in bad_host.stderr
    res = gw.cli("sessions", "resume", "here-1", "--on", "login3", "--dry-run", "--json")
    got = json.loads(res.stdout)  # run for real over ssh in tests/integration/test_campaign_ssh.py
    assert got["argv"][-2:] == ["login3", f"exec frontdesk sessions resume here-1 --dir {tmp_path} --json"]
    drained = json.loads(gw.cli("sessions", "drain", "--node", "login9", "--json").stdout)
    assert drained["sessions"][0]["signalled"] is False and "login9" in drained["sessions"][0]["reason"]
    assert json.loads(gw.cli("sessions", "show", "far-1", "--json").stdout)["suspended_at"] is not None
    bad = gw.cli("sessions", "resume", "far-1", "--dry-run")
    assert bad.returncode != 0 and "--dir" in bad.stderr  # no directory known: one line, non-zero
    missing = gw.cli("sessions", "show", "nope")
    assert missing.returncode != 0 and "no session" in missing.stderr
    assert gw.cli("sessions", "--json").returncode == 0  # the bare listing still works


def test_cancel_and_memory_writes_are_idempotent_for_the_session(gateway_factory: Any, tmp_path: Path) -> None:
    gw = gateway_factory()
    marker = tmp_path / "runs.txt"
    job = _run(gw, "camp-2", tmp_path, marker)
    gw.wait_state(job["id"], {"COMPLETED"})
    env = {"CLAUDE_CODE_SESSION_ID": "camp-2", "CLAUDECODE": "1"}
    again = gw.cli("cancel", str(job["id"]), "--json", env=env)  # a replayed turn cancels once more
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)[0]["already_ended"] is True
    text = gw.cli("cancel", str(job["id"]), env=env)
    assert text.stdout.strip() == f"job {job['id']} already ended (COMPLETED): nothing to cancel"
    other = gw.cli("cancel", str(job["id"]), env={"CLAUDE_CODE_SESSION_ID": "", "CLAUDECODE": ""})
    assert other.returncode != 0 and "already ended" in other.stderr  # not the job's session: still an error
    body = {"kind": "exit_error", "cause": "the data path is wrong", "template": "python train.py", "source": "agent"}
    first = gw.client.request("POST", "/v1/memory/lessons", body)
    second = gw.client.request("POST", "/v1/memory/lessons", body)  # the same write, replayed
    assert first["id"] == second["id"]
    fixed = gw.client.request("POST", "/v1/memory/lessons", {**body, "fix": "use /scratch/data"})
    assert fixed["id"] == first["id"] and fixed["fix"]["text"] == "use /scratch/data"  # the same lesson, fixed
    assert first["fix"] is None


def test_drain_suspends_the_sessions_of_this_node_and_their_jobs_run_on(gateway_factory: Any, tmp_path: Path) -> None:
    import signal
    import subprocess

    gw = gateway_factory()
    harnesses = [subprocess.Popen(["sleep", "300"]) for _ in range(2)]  # stand-ins for two harness processes
    try:
        for i, proc in enumerate(harnesses):
            body = {"event": "SessionStart", "harness": "claude-code", "cwd": str(tmp_path)}
            gw.client.request(
                "POST", f"/v1/sessions/drain-{i}/hook", {**body, "reach": {"host": HOST, "pid": proc.pid}}
            )
        job = _run(gw, "drain-0", tmp_path, tmp_path / "runs.txt")
        twice = gw.cli("sessions", "resume", "drain-0", "--headless")
        assert twice.returncode == 4 and "still runs here" in twice.stderr  # two harnesses on one session: no
        res = gw.cli("sessions", "drain", "--node", HOST, "--json")
        assert res.returncode == 0, res.stderr
        got = {d["session"]: d for d in json.loads(res.stdout)["sessions"]}
        assert {k: (v["signalled"], v["exited"]) for k, v in got.items()} == {
            "drain-0": (True, True),
            "drain-1": (True, True),
        }
        assert [p.wait(timeout=10) for p in harnesses] == [-signal.SIGTERM, -signal.SIGTERM]
        assert got["drain-0"]["resume"] == f"frontdesk sessions resume drain-0 --dir {tmp_path}"
        gw.wait_state(job["id"], {"COMPLETED"})  # the session's job was left alone
        assert json.loads(gw.cli("sessions", "show", "drain-1", "--json").stdout)["suspended_at"] is not None
        again = json.loads(gw.cli("sessions", "suspend", "drain-1", "--json").stdout)
        assert again["signalled"] is False and "no harness process" in again["reason"]  # pid + start time gone
    finally:
        for proc in harnesses:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


OWNERS = ("fdcamp1", "fdcamp2")
SRC = str(reachable(Path(__file__).resolve().parents[2] / "src"))


def _as(user: str, sock: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    """The real CLI as another Unix user (Debian's python3 and the source tree: the venv is under /root)."""
    import subprocess

    base = {"HOME": "/tmp", "PATH": "/usr/bin:/bin", "PYTHONPATH": SRC, "FRONTDESK_SOCKET": str(sock), **(env or {})}
    argv = ["runuser", "-u", user, "--", "env", "-i", *(f"{k}={v}" for k, v in base.items())]
    cmd = [*argv, "/usr/bin/python3", "-m", "frontdesk.cli.main", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd="/tmp")


def test_a_campaign_is_its_owners_only(gateway_factory: Any) -> None:
    import shutil
    import tempfile

    import pytest

    if os.geteuid() != 0 or not Path("/usr/bin/python3").exists():
        pytest.skip("needs root (creates Unix users) and /usr/bin/python3")
    from unix_users import ensure_user

    for name in OWNERS:
        ensure_user(name, home=False)
    sockdir = Path(tempfile.mkdtemp(prefix="fd-camp-", dir="/tmp"))
    sockdir.rmdir()
    sock = sockdir / "gateway.sock"
    from frontdesk.client import Client

    gw = gateway_factory(env={"FRONTDESK_SOCKET": str(sock)}, args=["--facility"], start=False)
    gw.socket, gw.client = sock, Client(socket_path=sock, timeout=30)
    gw.start()
    try:
        mine = {"CLAUDE_CODE_SESSION_ID": "own-1", "CLAUDECODE": "1"}
        res = _as("fdcamp1", sock, "run", "--json", "--", "true", env=mine)
        assert res.returncode == 0, res.stderr
        shown = _as("fdcamp1", sock, "sessions", "show", "own-1", "--json")
        assert shown.returncode == 0 and json.loads(shown.stdout)["user"] == "fdcamp1", shown.stderr
        for args in (("show", "own-1"), ("resume", "own-1", "--dry-run", "--dir", "/tmp"), ("suspend", "own-1")):
            other = _as("fdcamp2", sock, "sessions", *args)
            assert other.returncode != 0 and "no session 'own-1' of yours" in other.stderr, (args, other.stderr)
        same = _as("fdcamp2", sock, "run", "--json", "--", "true", env=mine)  # the same session id, same spec
        assert same.returncode == 0, same.stderr  # fdcamp2's own session of that id: its own job, its own key
        assert json.loads(same.stdout)["id"] != json.loads(res.stdout)["id"], same.stdout
        theirs = json.loads(_as("fdcamp2", sock, "sessions", "--json").stdout)
        assert [(r["id"], r["user"]) for r in theirs] == [("own-1", "fdcamp2")]
        shown = _as("fdcamp1", sock, "sessions", "show", "own-1", "--json")
        assert json.loads(shown.stdout)["user"] == "fdcamp1", shown.stdout  # the first user's session untouched
    finally:
        gw.stop()
        shutil.rmtree(sockdir, ignore_errors=True)


def test_a_replayed_batch_returns_the_jobs_it_made(gateway_factory: Any, tmp_path: Path) -> None:
    gw = gateway_factory()
    sid, marker = "camp-b", tmp_path / "runs.txt"
    _hook(gw, sid, "UserPromptSubmit", tmp_path)
    job = {"spec": {"command": ["sh", "-c", f"echo ran >> {marker}"]}}
    body = {"jobs": [job, job], "context": {"session": sid, "harness": "claude-code", "cwd": str(tmp_path)}}
    first = [j["id"] for j in gw.client.request("POST", "/v1/jobs/batch", body)["jobs"]]
    assert len(set(first)) == 2  # the same job twice in one turn: two jobs
    gw.client.request("POST", f"/v1/sessions/{sid}/turn", {"state": "in_turn"})
    gw.client.request("POST", f"/v1/sessions/{sid}/campaign/resume", {"dir": str(tmp_path), "commit": True})
    replay = gw.client.request("POST", "/v1/jobs/batch", body)["jobs"]
    assert [j["id"] for j in replay] == first and all(j.get("duplicate") for j in replay)
    for job_id in first:
        gw.wait_state(job_id, {"COMPLETED"})
    assert marker.read_text().split() == ["ran", "ran"]
