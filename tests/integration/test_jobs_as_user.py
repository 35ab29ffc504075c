"""Jobs run with their submitter's environment and as their submitter (issue 13, "Jobs run as their user").

Real gateways, real jobs, real Unix users (fdu1, fdu2, created here idempotently). A canary secret lives
only in the gateway's environment; the test greps every byte the gateway and its jobs leave behind
(job files, launch files, logs, reports, events, the database and its WAL) and each job's
/proc/PID/environ for it. Test users run the thin client with Debian's /usr/bin/python3 (the venv's
interpreter lives under /root, which they cannot enter), which also shows the client needs no venv.
"""

from __future__ import annotations

import grp
import json
import os
import pwd
import secrets
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from frontdesk.client import Client
from leftovers import stop_process
from unix_users import ensure_user, reachable

SRC = str(reachable(Path(__file__).resolve().parents[2] / "src"))
SYS_PY = "/usr/bin/python3"
USERS = ("fdu1", "fdu2")
GROUP = "fdgrp1"
"""A supplementary group of fdu1 (not its primary one): the job must carry it."""

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="creates Unix users and runs a root gateway")


@pytest.fixture(scope="module")
def users() -> dict[str, pwd.struct_passwd]:
    """fdu1 (in fdgrp1) and fdu2: real accounts (tests/unix_users.py)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to create users")
    return {name: ensure_user(name, (GROUP,) if name == "fdu1" else ()) for name in USERS}


def _user_dir(user: pwd.struct_passwd) -> Path:
    d = Path(tempfile.mkdtemp(prefix=f"fd-{user.pw_name}-", dir="/tmp"))
    os.chown(d, user.pw_uid, user.pw_gid)
    d.chmod(0o700)
    return d


def _as_user(
    user: str, sock: Path, cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The real CLI as another Unix user, over the facility socket, with a small clean environment."""
    base = {
        "HOME": f"/home/{user}",
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "PYTHONPATH": SRC,
        "FRONTDESK_SOCKET": str(sock),
        **(env or {}),
    }
    argv = ["runuser", "-u", user, "--", "env", "-i", *(f"{k}={v}" for k, v in base.items())]
    return subprocess.run(
        [*argv, SYS_PY, "-m", "frontdesk.cli.main", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _submitter_env(**extra: str) -> dict[str, str]:
    """The test's own environment less anything of the gateway's, plus the submitter's variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FD_", "FRONTDESK_"))}
    return {**env, **extra}


def _cli(gw: Any, *args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "frontdesk.cli.main", *args],
        env={**env, "FRONTDESK_HOME": str(gw.home)},
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


def _started_pid(home: Path, job_id: int, timeout: float = 30) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for f in (home / "local").glob(f"{job_id}.*/started.json"):
            try:
                return int(json.loads(f.read_text())["pid"])
            except (OSError, ValueError, KeyError):
                pass
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} never started")


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(item.decode().split("=", 1) for item in raw.split(b"\0") if b"=" in item)


def _status_ids(pid: int) -> dict[str, list[int]]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("Uid", "Gid", "Groups"):
            out[key] = [int(v) for v in value.split()]
    return out


def _grep_tree(root: Path, needle: bytes) -> list[str]:
    """Files under root whose bytes contain needle (the database's WAL and shm included)."""
    hits = []
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            try:
                if needle in path.read_bytes():
                    hits.append(str(path))
            except OSError:
                continue
    return hits


def _check_modes(home: Path, job_id: int, owner: int) -> None:
    """Files of the job: the user's, 0600 (a script 0700); directories 0700."""
    checked = 0
    for top in [home / "jobs" / str(job_id), *(home / "local").glob(f"{job_id}.*")]:
        for path in [top, *top.rglob("*")]:
            st = path.lstat()
            mode = stat.S_IMODE(st.st_mode)
            if stat.S_ISDIR(st.st_mode):
                assert mode == 0o700, f"{path}: directory mode {mode:o}"
            elif path.parent.parent.name == "jobs" or path.parent.parent.parent.name == "jobs":
                assert mode in (0o600, 0o700), f"{path}: mode {mode:o}"
                assert st.st_uid == owner, f"{path}: owned by uid {st.st_uid}, not {owner}"
            else:  # the gateway's control files (launch, result): private to the gateway
                assert mode == 0o600, f"{path}: mode {mode:o}"
            checked += 1
    assert checked >= 6


# -- 1. the environment: the submitter's, filtered; never the gateway's ------------------------------------


def test_job_environment_is_the_submitters_never_the_gateways(gateway_factory: Any, workdir: Path) -> None:
    canary = "fdcanary" + secrets.token_hex(12)
    gw = gateway_factory(
        env={"FD_CANARY_SECRET": canary, "FD_GATEWAY_ONLY": canary, "AWS_SECRET_ACCESS_KEY": canary},
        config="[env]\ndeny = ['MY_SITE_DENIED']\nallow = ['MY_ALLOWED_TOKEN']\n",
    )
    sub_secret = "subsecret" + secrets.token_hex(8)
    env = _submitter_env(
        MY_EXPERIMENT="exp42",
        MY_DB_PASSWORD=sub_secret,
        MY_SITE_DENIED=sub_secret,
        MY_ALLOWED_TOKEN="visible-token",
        MY_OWN_SECRET_OK="opted-in",
        FRONTDESK_ENV_ALLOW="MY_OWN_SECRET_*,MY_SITE_DENIED",  # the submitter's opt-in; the site's deny still wins
        FRONTDESK_TOKEN=sub_secret,  # the client's own credential never travels
    )
    long = _cli(gw, "run", "--json", "--", "sleep", "60", env=env, cwd=workdir)
    assert long.returncode == 0, long.stderr
    long_id = json.loads(long.stdout)["id"]
    pid = _started_pid(gw.home, long_id)
    seen = _environ(pid)
    assert seen["MY_EXPERIMENT"] == "exp42"
    assert seen["MY_ALLOWED_TOKEN"] == "visible-token"  # the site's allow list beats the built-in denylist
    assert seen["MY_OWN_SECRET_OK"] == "opted-in"
    assert "MY_DB_PASSWORD" not in seen and "MY_SITE_DENIED" not in seen and "FRONTDESK_TOKEN" not in seen
    assert canary.encode() not in Path(f"/proc/{pid}/environ").read_bytes()
    # Nor its shepherd's, which a job of the same user could read.
    shepherd = int(next((gw.home / "local").glob(f"{long_id}.*/shepherd.pid")).read_text().split()[0])
    assert canary.encode() not in Path(f"/proc/{shepherd}/environ").read_bytes()
    assert seen["FRONTDESK_JOB_ID"] == str(long_id)
    assert seen["HOME"] == env["HOME"] and seen["PATH"] == env["PATH"]
    assert seen["FRONTDESK_SOCKET"] == str(gw.socket)  # a `frontdesk` call inside the job reaches this gateway

    # A job that prints its whole environment: the output, the report and the logs carry no canary.
    done = _cli(gw, "run", "--wait", "--json", "--", "env", env=env, cwd=workdir)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert "MY_EXPERIMENT=exp42" in json.dumps(out)
    short_id = out["job"]["id"]
    cancel = _cli(gw, "cancel", str(long_id), env=env, cwd=workdir)
    assert cancel.returncode == 0, cancel.stderr
    gw.wait_state(long_id, {"CANCELLED"})

    texts = [
        _cli(gw, *args, env=env, cwd=workdir).stdout
        for args in (
            ("report", str(short_id), "--json"),
            ("logs", str(short_id), "--json"),
            ("events", "--json"),
            ("status", "--json"),
        )
    ]
    assert "MY_EXPERIMENT=exp42" in texts[1]
    for text in texts:
        assert canary not in text and sub_secret not in text
    hits = _grep_tree(gw.home, canary.encode())
    assert hits == []
    assert _grep_tree(gw.home, sub_secret.encode()) == []
    assert list(gw.home.glob("frontdesk.db*"))  # the database (and its WAL, while running) was grepped
    for job_id in (long_id, short_id):
        _check_modes(gw.home, job_id, os.geteuid())


def test_a_malformed_environment_is_refused_with_one_line(gateway: Any, workdir: Path) -> None:
    client = Client(socket_path=gateway.socket)
    from frontdesk.errors import UserError

    with pytest.raises(UserError, match="context.env"):
        client.submit(spec={"command": ["true"]}, context={"cwd": str(workdir), "env": {"A=B": "x"}})
    with pytest.raises(UserError, match="context.env"):
        client.submit(spec={"command": ["true"]}, context={"cwd": str(workdir), "env": {"A": "x\0y"}})
    assert gateway.client.jobs() == []  # nothing stored


# -- 2. run as the submitter ------------------------------------------------------------------------------


@pytest.fixture
def facility(gateway_factory: Any, users: dict[str, pwd.struct_passwd]) -> Iterator[tuple[Any, Path, str]]:
    """A root gateway in facility mode with its socket where every user can connect, and a canary."""
    canary = "fdcanary" + secrets.token_hex(12)
    sockdir = Path(tempfile.mkdtemp(prefix="fd-fac-", dir="/tmp"))
    sockdir.rmdir()  # the gateway creates its own socket directory
    sock = sockdir / "gateway.sock"
    gw = gateway_factory(
        env={"FD_CANARY_SECRET": canary, "FRONTDESK_SOCKET": str(sock)}, args=["--facility"], start=False
    )
    gw.socket = sock
    gw.client = Client(socket_path=sock, timeout=30)
    gw.start()
    yield gw, sock, canary
    shutil.rmtree(sockdir, ignore_errors=True)


@needs_root
def test_a_job_runs_as_its_submitter_with_their_groups(
    facility: tuple[Any, Path, str], users: dict[str, pwd.struct_passwd]
) -> None:
    gw, sock, canary = facility
    u1 = users["fdu1"]
    cwd = _user_dir(u1)
    res = _as_user("fdu1", sock, cwd, "run", "--json", "--", "sleep", "60", env={"MY_EXPERIMENT": "exp42"})
    assert res.returncode == 0, res.stderr
    job_id = json.loads(res.stdout)["id"]
    pid = _started_pid(gw.home, job_id)
    ids = _status_ids(pid)
    assert ids["Uid"] == [u1.pw_uid] * 4
    assert ids["Gid"] == [u1.pw_gid] * 4
    assert sorted(ids["Groups"]) == sorted(set(os.getgrouplist("fdu1", u1.pw_gid)))
    assert grp.getgrnam(GROUP).gr_gid in ids["Groups"]
    seen = _environ(pid)
    assert seen["MY_EXPERIMENT"] == "exp42" and seen["USER"] != "root"
    assert seen["HOME"] == "/home/fdu1"
    assert canary.encode() not in Path(f"/proc/{pid}/environ").read_bytes()
    assert os.readlink(f"/proc/{pid}/cwd") == str(cwd)

    cancel = _as_user("fdu1", sock, cwd, "cancel", str(job_id))
    assert cancel.returncode == 0, cancel.stderr
    gw.wait_state(job_id, {"CANCELLED"})
    _check_modes(gw.home, job_id, u1.pw_uid)
    assert _grep_tree(gw.home, canary.encode()) == []


@needs_root
def test_each_user_gets_their_own_identity_scripts_included(
    facility: tuple[Any, Path, str], users: dict[str, pwd.struct_passwd]
) -> None:
    gw, sock, _ = facility
    for name in USERS:
        cwd = _user_dir(users[name])
        res = _as_user(name, sock, cwd, "run", "--wait", "--json", "--", "sh", "-c", "id -un; id -u; touch made")
        assert res.returncode == 0, res.stderr
        report = json.loads(res.stdout)["reports"][0]
        assert report["stdout_tail"] == [name, str(users[name].pw_uid)]
        assert (cwd / "made").stat().st_uid == users[name].pw_uid
    # Scripts live in the gateway's 0700 directory: the user's job still runs them (through an fd).
    cwd = _user_dir(users["fdu2"])
    for script in ("#!/bin/sh\necho shebang-as-$(id -un)\n", "echo bash-as-$(id -un)\n"):
        spec = cwd / "job.json"
        spec.write_text(json.dumps({"script": script}))
        os.chown(spec, users["fdu2"].pw_uid, users["fdu2"].pw_gid)
        res = _as_user("fdu2", sock, cwd, "submit", "--wait", "--json", str(spec))
        assert res.returncode == 0, res.stderr + res.stdout
        tail = json.loads(res.stdout)["reports"][0]["stdout_tail"]
        assert tail in (["shebang-as-fdu2"], ["bash-as-fdu2"])


@needs_root
def test_a_workdir_the_user_cannot_enter_fails_the_job_never_runs_it_as_root(
    facility: tuple[Any, Path, str], users: dict[str, pwd.struct_passwd]
) -> None:
    gw, sock, _ = facility
    cwd = _user_dir(users["fdu1"])
    sentinel_dir = Path(tempfile.mkdtemp(prefix="fd-rootonly-", dir="/tmp"))  # root's, 0700
    try:
        res = _as_user("fdu1", sock, cwd, "run", "--wait", "--json", "--workdir", str(sentinel_dir), "--", "touch", "x")
        assert res.returncode == 1, res.stderr
        report = json.loads(res.stdout)["reports"][0]
        assert report["state"] == "FAILED"
        assert "cannot start as fdu1" in json.dumps(report)
        assert not (sentinel_dir / "x").exists()
    finally:
        shutil.rmtree(sentinel_dir, ignore_errors=True)


@needs_root
def test_the_cgroup_is_set_up_as_root_then_the_job_runs_as_its_user(
    facility: tuple[Any, Path, str], users: dict[str, pwd.struct_passwd]
) -> None:
    gw, sock, _ = facility
    cwd = _user_dir(users["fdu1"])
    hog = "id -un; exec /usr/bin/python3 -c 'x = b\"a\" * (400 << 20)'"
    res = _as_user("fdu1", sock, cwd, "run", "--wait", "--json", "--mem", "100M", "--", "sh", "-c", hog)
    report = json.loads(res.stdout)["reports"][0]
    assert report["state"] == "OUT_OF_MEMORY", res.stdout
    assert report["stdout_tail"] == ["fdu1"]
    result = json.loads(next((gw.home / "local").glob(f"{report['job_id']}.*/result.json")).read_text())
    assert result["enforcement"] in ("v1", "v2")  # a memory cgroup, made by root, joined before the drop


@needs_root
def test_landlock_applies_to_the_users_job(
    gateway_factory: Any, users: dict[str, pwd.struct_passwd], tmp_path: Path
) -> None:
    sockdir = Path(tempfile.mkdtemp(prefix="fd-fac-", dir="/tmp"))
    sockdir.rmdir()  # the gateway creates its own socket directory (0755 in facility mode)
    sock = sockdir / "gateway.sock"
    gw = gateway_factory(
        config="[local]\nlandlock = true\n", env={"FRONTDESK_SOCKET": str(sock)}, args=["--facility"], start=False
    )
    gw.socket, gw.client = sock, Client(socket_path=sock, timeout=30)
    gw.start()
    cwd = _user_dir(users["fdu1"])
    outside = Path(users["fdu1"].pw_dir) / f"fd-landlock-{secrets.token_hex(4)}"
    script = f"id -un; touch inside; touch {outside} && echo wrote-outside || echo refused-outside"
    res = _as_user("fdu1", sock, cwd, "run", "--wait", "--json", "--", "sh", "-c", script)
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)["reports"][0]
    assert report["stdout_tail"] == ["fdu1", "refused-outside"], res.stdout
    assert (cwd / "inside").stat().st_uid == users["fdu1"].pw_uid
    assert not outside.exists()
    shutil.rmtree(sockdir, ignore_errors=True)


def test_the_shepherd_never_imports_from_the_gateways_working_directory(tmp_path: Path, workdir: Path) -> None:
    """A root gateway started from a directory others can write must not run their code as root."""
    planted = tmp_path / "cwd"
    (planted / "frontdesk").mkdir(parents=True)
    sentinel = tmp_path / "imported"
    (planted / "frontdesk" / "__init__.py").write_text(f"open({str(sentinel)!r}, 'w').write('planted')\n")
    home = Path(tempfile.mkdtemp(prefix="fd-", dir="/tmp"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("FRONTDESK_")}
    env.update(FRONTDESK_HOME=str(home), FRONTDESK_NO_AUTOSTART="1", FRONTDESK_PLUGINS="none")
    script = Path(sys.executable).parent / "frontdesk"  # a console script: its own start ignores the cwd
    with open(tmp_path / "gateway.log", "wb") as log:
        proc = subprocess.Popen(
            [str(script), "serve"], cwd=planted, env=env, stdout=log, stderr=log, start_new_session=True
        )
    client = Client(socket_path=home / "run" / "gateway.sock", timeout=30)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                client.health()
                break
            except Exception:
                assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "gateway.log").read_text()
                time.sleep(0.05)
        job = client.submit(spec={"command": ["true"]}, context={"cwd": str(workdir)})
        report = client.wait([job["id"]], "all", 60)["reports"][0]
        assert report["state"] == "COMPLETED", report
        assert not sentinel.exists()
    finally:
        stop_process(proc)
        shutil.rmtree(home, ignore_errors=True)
