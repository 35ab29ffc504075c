"""Facility-mode helpers and fixtures (re-exported by conftest.py): real Unix users, a root facility gateway.

The users are made by tests/unix_users.py (when missing; removed at the session's end when a test made them).
One facility gateway runs as root for the module; the users talk to it through the real CLI, the HTTP API
over the Unix socket, TCP with hashed tokens and MUNGE, run as them with `runuser` and the system Python
(the venv's interpreter lives under /root, which other users cannot enter; the client is stdlib only); the code
they run is `unix_users.reachable` (a mirror when the checkout is under a directory they cannot enter).
"""

from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from frontdesk.client import Client
from frontdesk.errors import GatewayUnavailable
from frontdesk.identity import hash_token
from leftovers import stop_shepherds
from unix_users import ensure_user, reachable

ROOT = Path(__file__).resolve().parents[3]
SITE_PACKAGES = next((ROOT / ".venv" / "lib").glob("python3*/site-packages"), None)
USERS = {"alice": ["lab1"], "bob": ["lab1"], "carol": [], "fdadmin-user": ["fdadmin"]}
SYSTEM_PY = "/usr/bin/python3"


@pytest.fixture(scope="session")
def facility_users() -> dict[str, int]:
    """The test users (created when missing) → uid; skips where users cannot be made."""
    if os.geteuid() != 0 or not shutil.which("useradd") or not shutil.which("runuser"):
        pytest.skip("facility tests need root, useradd and runuser")
    if not Path(SYSTEM_PY).exists() or SITE_PACKAGES is None:
        pytest.skip("facility tests run clients with /usr/bin/python3 and the venv's site-packages")
    return {u: ensure_user(u, tuple(groups), shell="/bin/bash").pw_uid for u, groups in USERS.items()}


def user_env(user: str, **extra: str) -> list[str]:
    """`env -i ...` for a clean login-like environment of `user` (no root variables leak in)."""
    base = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": pwd.getpwnam(user).pw_dir,
        "USER": user,
        "LANG": "C.UTF-8",
        "PYTHONPATH": f"{reachable(ROOT / 'src')}:{reachable(SITE_PACKAGES)}",
        "PYTHONDONTWRITEBYTECODE": "1",
        **extra,
    }
    return ["env", "-i", *[f"{k}={v}" for k, v in base.items()]]


def run_as(
    user: str, argv: list[str], env: dict[str, str] | None = None, **kw: Any
) -> subprocess.CompletedProcess[str]:
    """Run argv as `user` (runuser) with a clean environment; cwd /tmp so nothing of root's is in reach."""
    return subprocess.run(
        ["runuser", "-u", user, "--", *user_env(user, **(env or {})), *argv],
        capture_output=True,
        text=True,
        timeout=kw.pop("timeout", 120),
        cwd="/tmp",
        **kw,
    )


@dataclass
class Facility:
    """A facility gateway run by root, and how each user reaches it."""

    dir: Path
    site: Path
    socket: Path
    url: str
    tokens: dict[str, str]
    tokens_file: Path
    proc: subprocess.Popen[bytes] | None = None
    jobs: dict[str, int] = field(default_factory=dict)

    def env(self, **extra: str) -> dict[str, str]:
        """What a user's shell on this site has: the site config (it names the facility socket)."""
        return {"FRONTDESK_SITE_CONFIG": str(self.site), **extra}

    def cli(self, user: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """The real CLI as `user`."""
        return run_as(user, [SYSTEM_PY, "-m", "frontdesk.cli.main", *args], env=self.env(**(env or {})))

    def probe(self, user: str, calls: list[dict[str, Any]], env: dict[str, str] | None = None) -> list[Any]:
        """HTTP calls as `user` in one process: [{method, path, body}] → [[status-or-code, answer]]."""
        script = reachable(Path(__file__).with_name("probe.py"))
        r = run_as(user, [SYSTEM_PY, str(script)], env=self.env(**(env or {})), input=json.dumps(calls))
        assert r.returncode == 0, r.stderr
        out: list[Any] = json.loads(r.stdout)
        return out

    def root_client(self) -> Client:
        return Client(socket_path=self.socket, timeout=30)

    def ended(self, job_id: int, timeout: float = 120) -> dict[str, Any]:
        """The job's record (read as root) once it has ended and its report is built; fails after `timeout` s."""
        root = self.root_client()
        deadline = time.monotonic() + timeout
        while True:
            rec: dict[str, Any] = root.request("GET", f"/v1/jobs/{job_id}")
            if rec.get("ended_at") and not rec.get("report_pending"):
                return rec
            assert time.monotonic() < deadline, rec
            time.sleep(0.2)

    def log(self) -> str:
        return (self.dir / "gateway.log").read_text(errors="replace")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _site_config(d: Path, port: int, tokens_file: Path, access: str = "", gateway: str = "") -> str:
    plugins = "" if "plugins" in gateway else 'plugins = ["guard", "memory", "policy", "agents"]'
    return f"""
[gateway]
mode = "facility"
{gateway}
socket = "{d / "run" / "gateway.sock"}"
listen = "127.0.0.1:{port}"
tokens_file = "{tokens_file}"
munge = true
{plugins}

[local]
cpus = 16  # two sleeping jobs of alice's must not hold back the others' on a 2-core machine

[access]
admins_group = "fdadmin"
{access}"""


def serve(fac: Facility) -> None:
    """Start (or, after a kill, start again) the facility gateway on `fac`'s home and site config; return once it
    answers. A failed start is never left running (holding its port and socket)."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("FRONTDESK_")},
        "FRONTDESK_HOME": str(fac.dir / "home"),
        "FRONTDESK_SITE_CONFIG": str(fac.site),
    }
    with open(fac.dir / "gateway.log", "ab") as log:
        fac.proc = subprocess.Popen(
            [sys.executable, "-m", "frontdesk.cli.main", "serve", "--log-level", "info"],
            env=env,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    deadline = time.monotonic() + 60  # a gateway start on a loaded machine
    while True:
        try:
            fac.root_client().health()
            return
        except GatewayUnavailable:
            if fac.proc.poll() is not None or time.monotonic() > deadline:
                fac.proc.kill()
                fac.proc.wait()
                raise RuntimeError("facility gateway did not start:\n" + fac.log()[-3000:]) from None
            time.sleep(0.05)


@pytest.fixture(scope="module")
def facility(facility_users: dict[str, int], request: pytest.FixtureRequest) -> Iterator[Facility]:
    """A running facility gateway (root) with a site config, hashed tokens for every user and MUNGE on TCP.

    A test module's `FACILITY_ACCESS` (TOML lines) is added to the site's `[access]` table, its
    `FACILITY_GATEWAY` to `[gateway]` (e.g. `backend = "slurm"`)."""
    d = Path(tempfile.mkdtemp(prefix="fdfac-", dir="/tmp"))
    d.chmod(0o755)
    port = _free_port()
    tokens = {u: secrets.token_urlsafe(24) for u in USERS}
    tokens_file = d / "tokens"
    tokens_file.write_text("".join(f"{u} {hash_token(t)}\n" for u, t in tokens.items()))
    tokens_file.chmod(0o600)
    site = d / "frontdesk.toml"
    extra = getattr(request.module, "FACILITY_ACCESS", ""), getattr(request.module, "FACILITY_GATEWAY", "")
    site.write_text(_site_config(d, port, tokens_file, *extra))
    site.chmod(0o644)  # the site config holds no tokens: every user reads it to find the gateway
    fac = Facility(d, site, d / "run" / "gateway.sock", f"http://127.0.0.1:{port}", tokens, tokens_file)
    serve(fac)
    yield fac
    fac.proc.send_signal(signal.SIGTERM)
    try:
        fac.proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        fac.proc.kill()
        fac.proc.wait()
    stop_shepherds(d / "home")
    shutil.rmtree(d, ignore_errors=True)
