"""Issue 18 with the real Claude Code and Codex binaries (tests/harness/node) against loopback API stand-ins: a
campaign submits jobs, the harness and the gateway are killed -9 in the middle of a turn, the project tree is
copied elsewhere (as another node sees it), `frontdesk sessions resume` relaunches the harness's resume there,
the reports that arrived meanwhile come first in the model's next request, the stand-in model replays the
same submission, and no job runs twice (each run appends a line to a file)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest

HARNESS = Path(__file__).resolve().parents[1] / "harness"
NODE = HARNESS / "node"
sys.path.insert(0, str(HARNESS))

from anthropic_standin import MessagesStandIn  # noqa: E402
from live.responses_standin import ResponsesStandIn, input_text  # noqa: E402

pytestmark = [pytest.mark.harness, pytest.mark.slow]

FIRST = "frontdesk run --name first -- sh -c 'echo first >> {runs}'"
SECOND = "frontdesk run --name second -- sh -c 'sleep 2; echo second >> {runs}'"
TOOLS = "Bash"  # 2.1.332 offers no TodoWrite under -p: the plan path is covered by tests/unit/agents


def _env(gw: Any, url: str, home: Path) -> dict[str, str]:
    env = {
        **gw.env,
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "sk-test",
        "HOME": str(home),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    for key in ("CLAUDE_CODE_SESSION_ID", "CLAUDECODE", "FRONTDESK_SESSION", "CODEX_THREAD_ID"):
        env.pop(key, None)
    return env


def _until(check: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def _job_ids(text: str) -> list[int]:
    return [int(line) for line in text.split() if line.isdigit()]


@contextmanager
def _harness(argv: list[str], cwd: Path, env: dict[str, str], log: Any, **popen: Any) -> Iterator[Any]:
    """The harness in its own process group, which is killed -9 on the way out (with its tool call, mid-turn)."""
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stderr=log, start_new_session=True, **popen)
    try:
        yield proc
    finally:
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _after_the_crash(gw: Any) -> tuple[str, dict[str, Any], dict[str, int]]:
    """kill -9 the gateway and start it again; wait until both jobs of the one campaign completed and their two
    reports are stored unread. (session id, the campaign then, job ids by name)."""
    gw.kill9()
    gw.start()
    sessions = gw.client.request("GET", "/v1/sessions")
    assert len(sessions) == 1, sessions
    sid = sessions[0]["id"]
    jobs = {j["name"]: j["id"] for j in gw.client.request("GET", f"/v1/sessions/{sid}/campaign")["jobs"]}
    assert set(jobs) == {"first", "second"}, jobs
    for job in jobs.values():
        gw.wait_state(job, {"COMPLETED"}, timeout=60)
    _until(lambda: len(gw.client.request("GET", f"/v1/sessions/{sid}/campaign")["unread"]) == 2, 30, "two reports")
    camp = gw.client.request("GET", f"/v1/sessions/{sid}/campaign")
    assert camp["turn_state"] == "in_turn" and camp["turn"] == 1, camp
    return sid, camp, jobs


def _nothing_ran_twice(said: str, jobs: dict[str, int], runs: Path) -> None:
    """The replayed submission (its output: `said`) returned the job it made before; each job ran once."""
    assert f"job {jobs['second']}: already submitted with the same idempotency key" in said, said
    assert sorted(runs.read_text().split()) == ["first", "second"]


def _killed_campaign(gw: Any, claude_bin: Path, project: Path, home: Path, runs: Path) -> tuple[str, dict[str, int]]:
    """Run a campaign that submits two jobs, kill -9 the harness in its third tool call and the gateway; restart
    the gateway and wait until both jobs ended and their reports are stored unread. (session id, job ids)."""
    project.mkdir(parents=True)
    home.mkdir(exist_ok=True)
    assert gw.cli("hooks", "install", "claude", "--project", "--dir", str(project), "--no-guard").returncode == 0
    script = [("bash", FIRST.format(runs=runs)), ("bash", SECOND.format(runs=runs)), ("bash", "sleep 600")]
    argv = [str(claude_bin), "-p", "run the campaign", "--allowedTools", TOOLS, "--output-format", "json"]
    with MessagesStandIn(script) as api, open(project.parent / "claude.log", "wb") as log:
        with _harness(argv, project, _env(gw, api.url, home), log, stdout=subprocess.DEVNULL) as proc:
            _until(lambda: len(api.loop_requests) >= 3 or proc.poll() is not None, 180, "the third model request")
            assert proc.poll() is None, (project.parent / "claude.log").read_text()[-2000:]
            submitted = _job_ids(MessagesStandIn.last_user_text(api.loop_requests[2]))
    sid, camp, jobs = _after_the_crash(gw)
    assert jobs["second"] in submitted and camp["resume_handle"] == sid
    return sid, jobs


def test_claude_campaign_resumes_on_a_copied_tree_and_runs_nothing_twice(
    gateway_factory: Any, claude_bin: Path, tmp_path: Path
) -> None:
    config = f'[agents]\nbatch_window_s = 0.3\nchannels = ["hooks"]\nclaude_bin = "{claude_bin}"\n'
    gw = gateway_factory(config=config)
    project, runs, home = tmp_path / "node1" / "proj", tmp_path / "runs.txt", tmp_path / "home"
    sid, jobs = _killed_campaign(gw, claude_bin, project, home, runs)
    second = SECOND.format(runs=runs)

    copy = tmp_path / "node2" / "proj"
    shutil.copytree(project, copy)  # the tree as another node sees it
    replay = [("bash", second), ("text", "Both runs are done.")]
    with MessagesStandIn(replay, first_id=100) as api2:  # tool_use ids the transcript does not hold yet
        res = subprocess.run(
            [
                sys.executable,
                "-m",
                "frontdesk.cli.main",
                "sessions",
                "resume",
                sid,
                "--dir",
                str(copy),
                "--headless",
                "--harness-args",
                f"--allowedTools {TOOLS}",
            ],
            env=_env(gw, api2.url, home),
            capture_output=True,
            text=True,
            timeout=240,
        )
    assert res.returncode == 0, res.stderr[-3000:]
    assert json.loads(res.stdout)["session_id"] == sid
    loop = api2.loop_requests
    assert len(loop) == 2, [MessagesStandIn.last_user_text(b)[:300] for b in loop]
    prompt = MessagesStandIn.last_user_text(loop[0])
    reports = [prompt.find(f"{jobs['first']} (first) COMPLETED"), prompt.find(f"{jobs['second']} (second) COMPLETED")]
    assert -1 not in reports and max(reports) < prompt.index("Campaign summary"), prompt[:1500]
    assert "run the campaign" in json.dumps(loop[0]["messages"][0])  # the resumed transcript came along
    said = MessagesStandIn.last_user_text(loop[1])
    _nothing_ran_twice(said, jobs, runs)
    assert _job_ids(said) == [jobs["second"]]  # the replayed submission returned the job it made before
    after = gw.client.request("GET", f"/v1/sessions/{sid}/campaign")
    assert len(after["jobs"]) == 2 and after["unread"] == [] and after["incarnation"] == 1
    assert after["cwd"] == str(copy)


def test_suspend_ends_the_real_harness_and_its_job_runs_on(
    gateway_factory: Any, claude_bin: Path, tmp_path: Path
) -> None:
    gw = gateway_factory(config='[agents]\nchannels = ["hooks"]\n')
    project, home, runs = tmp_path / "proj", tmp_path / "home", tmp_path / "runs.txt"
    project.mkdir()
    home.mkdir()
    assert gw.cli("hooks", "install", "claude", "--project", "--dir", str(project), "--no-guard").returncode == 0
    script = [("bash", f"frontdesk run --name long -- sh -c 'sleep 3; echo long >> {runs}'"), ("bash", "sleep 600")]
    argv = [str(claude_bin), "-p", "run it", "--allowedTools", TOOLS, "--output-format", "json"]
    with MessagesStandIn(script) as api, open(tmp_path / "claude.log", "wb") as log:
        with _harness(argv, project, _env(gw, api.url, home), log, stdout=subprocess.DEVNULL) as proc:
            _until(lambda: len(api.loop_requests) >= 2 or proc.poll() is not None, 180, "the second model request")
            sid = gw.client.request("GET", "/v1/sessions")[0]["id"]
            res = gw.cli("sessions", "suspend", sid, "--json")
            assert res.returncode == 0, res.stderr
            got = json.loads(res.stdout)
            assert got["signalled"] and got["exited"] and got["pid"] == proc.pid
            assert proc.wait(timeout=30) != 0  # ended by the signal, not by finishing its turn
    camp = gw.client.request("GET", f"/v1/sessions/{sid}/campaign")
    assert camp["suspended_at"] is not None and [j["name"] for j in camp["jobs"]] == ["long"]
    gw.wait_state(camp["jobs"][0]["id"], {"COMPLETED"}, timeout=60)  # the job ran on without its harness
    assert runs.read_text().split() == ["long"]


def test_a_headless_resume_runs_as_a_frontdesk_job(gateway_factory: Any, claude_bin: Path, tmp_path: Path) -> None:
    """`--slurm`: the resume is submitted as a job; the job relaunches the harness, which gets the reports first."""
    config = f'[agents]\nbatch_window_s = 0.3\nchannels = ["hooks"]\nclaude_bin = "{claude_bin}"\n'
    gw = gateway_factory(config=config)
    project, runs, home = tmp_path / "proj", tmp_path / "runs.txt", tmp_path / "home"
    sid, jobs = _killed_campaign(gw, claude_bin, project, home, runs)
    with MessagesStandIn([("text", "Both ran; carrying on.")], first_id=100) as api2:
        args = ["sessions", "resume", sid, "--slurm", "--harness-args", f"--allowedTools {TOOLS}", "--json"]
        allow = {"FRONTDESK_ENV_ALLOW": "ANTHROPIC_API_KEY"}  # a job gets no *_API_KEY unless its submitter says so
        res = gw.cli(*args, env={**_env(gw, api2.url, home), **allow}, cwd=tmp_path)
        assert res.returncode == 0, res.stderr
        job = json.loads(res.stdout)["job"]
        done = gw.wait_state(job["id"], {"COMPLETED", "FAILED"}, timeout=180)
        assert done["state"] == "COMPLETED", gw.client.request("GET", f"/v1/jobs/{job['id']}/report")["text"]
    prompt = MessagesStandIn.last_user_text(api2.loop_requests[0])
    assert prompt.index(f"{jobs['second']} (second) COMPLETED") < prompt.index("Campaign summary")
    after = gw.client.request("GET", f"/v1/sessions/{sid}/campaign")
    assert (
        after["unread"] == [] and after["incarnation"] == 1 and sorted(runs.read_text().split()) == ["first", "second"]
    )


CODEX = NODE / "node_modules" / ".bin" / "codex"
CODEX_ARGS = "--trust --dangerously-bypass-hook-trust --sandbox danger-full-access"
FD = str(Path(sys.executable).parent / "frontdesk")  # Codex runs commands in a login shell: PATH is reset


def _codex_cmd(template: str, runs: Path) -> str:
    return template.format(runs=runs).replace("frontdesk run", f"{FD} run", 1)


def _codex_home(home: Path, url: str, trusted: Path | None = None) -> dict[str, str]:
    """Codex's config pointing at the stand-in (rewritten per stand-in), and its environment."""
    (home / ".codex").mkdir(parents=True, exist_ok=True)
    trust = f'[projects."{trusted}"]\ntrust_level = "trusted"\n' if trusted else ""
    (home / ".codex" / "config.toml").write_text(
        f'model = "gpt-standin"\nmodel_provider = "standin"\n[model_providers.standin]\nname = "standin"\n'
        f'base_url = "{url}"\nwire_api = "responses"\nenv_key = "STANDIN_API_KEY"\n{trust}'
    )
    return {"HOME": str(home), "CODEX_HOME": str(home / ".codex"), "STANDIN_API_KEY": "k"}


def _codex_gateway(gateway_factory: Any, tmp_path: Path, codex_bin: Path) -> tuple[Any, Path, Path, Path]:
    """A gateway that resumes Codex, and node1's project with Codex's hooks installed. (gateway, project, runs, home)"""
    gw = gateway_factory(config=f'[agents]\nbatch_window_s = 0.3\nchannels = ["hooks"]\ncodex_bin = "{codex_bin}"\n')
    project, runs, home = tmp_path / "node1" / "proj", tmp_path / "runs.txt", tmp_path / "home"
    project.mkdir(parents=True)
    assert gw.cli("hooks", "install", "codex", "--project", "--dir", str(project)).returncode == 0
    return gw, project, runs, home


def test_codex_campaign_resumes_on_a_copied_tree_and_runs_nothing_twice(
    gateway_factory: Any, codex_bin: Path, tmp_path: Path
) -> None:
    gw, project, runs, home = _codex_gateway(gateway_factory, tmp_path, codex_bin)
    steps = [{"step": "run first", "status": "completed"}, {"step": "run second", "status": "in_progress"}]
    script = [("plan", json.dumps({"plan": steps})), ("shell", _codex_cmd(FIRST, runs))]
    script += [("shell", _codex_cmd(SECOND, runs)), ("shell", "sleep 600")]
    argv = [str(CODEX), "exec", "--skip-git-repo-check", *CODEX_ARGS.split(), "--json", "run the campaign"]
    with ResponsesStandIn(script) as api, open(tmp_path / "codex.log", "wb") as log:
        env = {**_env(gw, "", home), **_codex_home(home, api.url)}
        with _harness(argv, project, env, log, stdin=subprocess.DEVNULL, stdout=log) as proc:
            _until(lambda: len(api.requests) >= 4 or proc.poll() is not None, 180, "the fourth model request")
            assert proc.poll() is None, (tmp_path / "codex.log").read_text()[-2000:]
    sid, camp, jobs = _after_the_crash(gw)
    assert camp["harness"] == "codex" and camp["resume_handle"] == sid  # the thread id, from Codex's hooks
    _codex_resumed(gw, sid, tmp_path, home, runs, jobs, CODEX_ARGS)
    after = gw.client.request("GET", f"/v1/sessions/{sid}/campaign")
    assert len(after["jobs"]) == 2 and after["unread"] == [] and after["incarnation"] == 1
    # Codex's update_plan, read from the rollout file its hooks name (the resumed turn's hooks read it)
    assert after["plan"] == [{"text": s["step"], "status": s["status"]} for s in steps]
    assert after["plan_source"] == "update_plan" and "/.codex/sessions/" in after["transcript_path"]


def _codex_resumed(
    gw: Any,
    sid: str,
    tmp_path: Path,
    home: Path,
    runs: Path,
    jobs: dict[str, int],
    harness_args: str,
    trusted: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Copy the tree to node2, `frontdesk sessions resume --headless` the thread there against a stand-in that
    replays the second submission; both reports come first in its first request, and nothing ran twice."""
    copy = tmp_path / "node2" / "proj"
    shutil.copytree(tmp_path / "node1" / "proj", copy)  # the tree as another node sees it
    replay = [("shell", _codex_cmd(SECOND, runs)), ("text", "Both runs are done.")]
    with ResponsesStandIn(replay, first_id=100) as api2:
        env = {**_env(gw, "", home), **_codex_home(home, api2.url, trusted=copy if trusted else None)}
        args = ["sessions", "resume", sid, "--dir", str(copy), "--headless", "--harness-args", harness_args]
        res = subprocess.run(
            [sys.executable, "-m", "frontdesk.cli.main", *args],
            env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=240,
        )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    assert len(api2.requests) == 2, [input_text(b)[-300:] for b in api2.requests]
    text = input_text(api2.requests[0])
    reports = [text.rfind(f"{jobs['first']} (first) COMPLETED"), text.rfind(f"{jobs['second']} (second) COMPLETED")]
    assert text.index("run the campaign") < min(reports) and max(reports) < text.rindex("Campaign summary")
    _nothing_ran_twice(ResponsesStandIn.outputs(api2.requests[1])[-1], jobs, runs)
    return res


def _trust_hooks(server: Any, home: Path, project: Path) -> None:
    """What a person does once in the IDE: review the project's hooks; their hashes go to config.toml."""
    listed = server.call("hooks/list", {"cwds": [str(project)]})["data"]
    hooks = [h for entry in listed for h in entry.get("hooks", []) if h.get("source") == "project"]
    assert hooks, listed
    with open(home / ".codex" / "config.toml", "a") as fh:
        for h in hooks:
            fh.write(f'[hooks.state."{h["key"]}"]\ntrusted_hash = "{h["currentHash"]}"\n')


def _app_server_campaign(gw: Any, project: Path, home: Path, runs: Path, log: Path) -> str:
    """Start a Codex thread through `codex app-server` (as an IDE would), run a turn that submits two jobs, kill -9
    the server and its shell call in the third tool call. The thread id."""
    from frontdesk.agents.codex_appserver import AppServer

    script = [("shell", _codex_cmd(FIRST, runs)), ("shell", _codex_cmd(SECOND, runs)), ("shell", "sleep 600")]
    with ResponsesStandIn(script) as api, open(log, "wb") as err:
        env = {**_env(gw, "", home), **_codex_home(home, api.url, trusted=project)}
        server = AppServer([str(CODEX), "app-server", *APP_ARGS], str(project), err, env=env, own_group=True)
        try:
            server.call("initialize", {"clientInfo": {"name": "an-ide", "version": "1"}})
            server.send({"method": "initialized"})
            _trust_hooks(server, home, project)
            start = {"cwd": str(project), "approvalPolicy": "never", "sandbox": "danger-full-access"}
            thread = server.call("thread/start", start)["thread"]["id"]
            server.call("turn/start", {"threadId": thread, "input": [{"type": "text", "text": "run the campaign"}]})
            _until(lambda: len(api.requests) >= 3 or server.proc.poll() is not None, 180, "the third model request")
            assert server.proc.poll() is None, log.read_text()[-2000:]
        finally:
            os.killpg(server.proc.pid, signal.SIGKILL)  # the app server and its shell call, mid-turn
            server.close()
    return str(thread)


APP_ARGS: list[str] = []


def test_codex_thread_started_by_the_app_server_resumes_through_it(
    gateway_factory: Any, codex_bin: Path, tmp_path: Path
) -> None:
    gw, project, runs, home = _codex_gateway(gateway_factory, tmp_path, codex_bin)
    thread = _app_server_campaign(gw, project, home, runs, tmp_path / "codex.log")
    sid, camp, jobs = _after_the_crash(gw)
    assert sid == thread and camp["harness"] == "codex", camp  # turn 1, in turn: the hooks ran under the app server
    res = _codex_resumed(gw, thread, tmp_path, home, runs, jobs, shlex.join(APP_ARGS), trusted=True)
    assert "through codex app-server" in res.stderr  # chosen from the rollout: an app-server client started it
    assert res.stdout.strip().splitlines()[-1] == "Both runs are done."  # the agent's message, from the server
    copy = tmp_path / "node2" / "proj"
    after = gw.client.request("GET", f"/v1/sessions/{thread}/campaign")
    assert after["unread"] == [] and after["incarnation"] == 1 and after["cwd"] == str(copy)
    dry = gw.cli("sessions", "resume", thread, "--via", "exec", "--headless", "--dry-run", "--json")
    assert json.loads(dry.stdout)["argv"][1:2] == ["exec"]  # asked for: the exec path still there
