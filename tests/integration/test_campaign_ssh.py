"""`frontdesk sessions resume ID --on HOST` over a real ssh: a private sshd on 127.0.0.1 (tests/harness/sshd_lab.py)
stands in for another login node. The real Claude Code campaign is killed -9 with the gateway, the tree is copied
to a path with a space and a quote (the remote command's quoting), and the resume runs through ssh: the harness's
output and exit status come back, the reports are first in its prompt, the replayed submission runs nothing twice.
An unreachable host and a refused key give one line and exit 69; a remote failure's status passes through."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HARNESS = Path(__file__).resolve().parents[1] / "harness"
sys.path.insert(0, str(HARNESS))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from anthropic_standin import MessagesStandIn  # noqa: E402
from sshd_lab import PrivateSshd  # noqa: E402
from test_campaign_resume import SECOND, TOOLS, _env, _job_ids, _killed_campaign  # noqa: E402

from unix_users import ensure_user  # noqa: E402

VENV_BIN = str(Path(sys.executable).parent)


TEST_USER = "fdt18ssh"  # another login on the "other node" (tests/unix_users.py)


def _test_user() -> str:
    ensure_user(TEST_USER)
    subprocess.run(["usermod", "-p", "*", TEST_USER], check=True, capture_output=True)  # no password, not locked
    return TEST_USER


@pytest.fixture
def sshd() -> Iterator[Any]:
    """Start private sshds with a given remote environment (the test user may log in too); all stopped afterwards."""
    started: list[PrivateSshd] = []

    def make(env: dict[str, str]) -> PrivateSshd:
        s = PrivateSshd(env, users=[_test_user()])
        started.append(s)
        return s

    yield make
    for s in started:
        s.stop()


def _remote_env(gw: Any, local: dict[str, str]) -> dict[str, str]:
    """What the login node's own configuration gives a login shell: the gateway's address, frontdesk on PATH."""
    keep = ("FRONTDESK_HOME", "FRONTDESK_NO_AUTOSTART", "HOME", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY")
    env = {k: local[k] for k in keep if k in local}
    env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1"
    env["PATH"] = f"{VENV_BIN}:/usr/local/bin:/usr/bin:/bin"
    return env


def _resume(gw: Any, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "frontdesk.cli.main", "sessions", "resume", *args],
        env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


@pytest.mark.harness
@pytest.mark.slow
def test_resume_on_another_host_runs_the_harness_there_over_ssh(
    gateway_factory: Any,
    claude_bin: Path,
    sshd: Any,
    tmp_path: Path,
) -> None:
    config = f'[agents]\nbatch_window_s = 0.3\nchannels = ["hooks"]\nclaude_bin = "{claude_bin}"\n'
    gw = gateway_factory(config=config)
    project, runs, home = tmp_path / "node1" / "proj", tmp_path / "runs.txt", tmp_path / "home"
    sid, jobs = _killed_campaign(gw, claude_bin, project, home, runs)
    copy = tmp_path / "node 2's tree" / "proj"
    shutil.copytree(project, copy)  # the tree as the other node sees it
    replay = [("bash", SECOND.format(runs=runs)), ("text", "Both runs are done.")]
    with MessagesStandIn(replay, first_id=100) as api2:
        local = _env(gw, api2.url, home)
        host = sshd(_remote_env(gw, local))
        args = [sid, "--on", "127.0.0.1", "--dir", str(copy), "--headless", "--harness-args", f"--allowedTools {TOOLS}"]
        res = _resume(gw, *args, env={**local, "FRONTDESK_SSH": host.ssh})
    assert res.returncode == 0, res.stderr[-3000:]
    assert json.loads(res.stdout)["session_id"] == sid  # claude's own JSON answer, through ssh
    assert "Accepted publickey" in (host.root / "sshd.log").read_text()  # it went through the server
    prompt = MessagesStandIn.last_user_text(api2.loop_requests[0])
    assert prompt.index(f"{jobs['first']} (first) COMPLETED") < prompt.index("Campaign summary")
    said = MessagesStandIn.last_user_text(api2.loop_requests[1])
    assert _job_ids(said) == [jobs["second"]] and "already submitted with the same idempotency key" in said
    assert sorted(runs.read_text().split()) == ["first", "second"]  # nothing ran twice
    after = gw.client.request("GET", f"/v1/sessions/{sid}/campaign")
    assert after["cwd"] == str(copy) and after["incarnation"] == 1 and after["unread"] == []


def _registered(gw: Any, tmp_path: Path) -> str:
    cwd = tmp_path / "proj"
    cwd.mkdir(exist_ok=True)
    body = {"session": "ssh-s1", "harness": "claude-code", "cwd": str(cwd)}
    return str(gw.client.request("POST", "/v1/sessions", body)["id"])


def test_an_unreachable_host_or_a_refused_key_is_one_line_and_exit_69(
    gateway_factory: Any, sshd: Any, tmp_path: Path
) -> None:
    gw = gateway_factory()
    sid = _registered(gw, tmp_path)
    host = sshd({"PATH": f"{VENV_BIN}:/usr/bin:/bin", "FRONTDESK_HOME": gw.env["FRONTDESK_HOME"]})
    down = tmp_path / "down_config"  # the same client settings, a port nobody listens on
    down.write_text(host.client_config.read_text().replace(f"Port {host.port}", "Port 1"))
    res = _resume(gw, sid, "--on", "127.0.0.1", "--headless", env={**gw.env, "FRONTDESK_SSH": f"ssh -F {down}"})
    assert res.returncode == 69, res.stderr
    assert res.stderr.splitlines()[-1].startswith("frontdesk: cannot reach 127.0.0.1 over ssh: connect to host")
    (host.root / "authorized_keys").write_text("")  # the server no longer knows the key
    res = _resume(gw, sid, "--on", "127.0.0.1", "--headless", env={**gw.env, "FRONTDESK_SSH": host.ssh})
    assert res.returncode == 69, res.stderr
    assert "cannot reach 127.0.0.1 over ssh:" in res.stderr and "Permission denied" in res.stderr
    assert len([line for line in res.stderr.splitlines() if "Permission denied" in line]) == 1
    res = _resume(gw, sid, "--on", "-oProxyCommand=touch /tmp/x", env=gw.env)
    assert res.returncode == 2 and "not a host name" in res.stderr
    assert gw.client.request("GET", f"/v1/sessions/{sid}/campaign")["incarnation"] == 0  # nothing was recorded


def test_the_remote_exit_status_and_output_pass_through(gateway_factory: Any, sshd: Any, tmp_path: Path) -> None:
    gw = gateway_factory()
    sid = _registered(gw, tmp_path)
    host = sshd({"PATH": f"{VENV_BIN}:/usr/bin:/bin", "FRONTDESK_HOME": gw.env["FRONTDESK_HOME"]})
    env = {**gw.env, "FRONTDESK_SSH": host.ssh}
    res = _resume(gw, sid, "--on", "127.0.0.1", "--dir", str(tmp_path / "not on that node"), "--headless", env=env)
    assert res.returncode == 2, res.stderr  # the remote frontdesk's own UserError, not ssh's
    assert "not on that node: no such directory (pass --dir PATH" in res.stderr
    other = _resume(gw, sid, "--on", f"{TEST_USER}@127.0.0.1", "--headless", env=env)
    # that login is not the session's user (nor may it run this checkout's frontdesk): its refusal comes back as is
    assert other.returncode not in (0, 69, 255) and "cannot reach" not in other.stderr, other.stderr
    assert f"Accepted publickey for {TEST_USER}" in (host.root / "sshd.log").read_text()
    dry = _resume(gw, sid, "--on", "127.0.0.1", "--dry-run", "--json", env=env)
    argv = json.loads(dry.stdout)["argv"]
    assert argv[-2:] == [
        "127.0.0.1",
        f"exec frontdesk sessions resume {sid} --dir {tmp_path}/proj --json",
    ]
    assert "BatchMode=yes" in argv
