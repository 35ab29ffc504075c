"""Zero setup (issue 13, "Setup"): on a fresh HOME the first client call starts the user's gateway.

Each test gets a fresh HOME and XDG_RUNTIME_DIR and a clean environment (no FRONTDESK_*), runs the real
CLI, and stops exactly the gateway it caused to start (by the pid in its state directory's lock file).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

STARTED = "frontdesk: started your gateway"


class Fresh:
    """A fresh account's HOME and runtime directory, and the CLI run there."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.run_dir = root / "run"
        self.work = root / "work"
        for d in (self.home, self.run_dir, self.work):
            d.mkdir(mode=0o700)
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "XDG_RUNTIME_DIR": str(self.run_dir),
            "LANG": "C.UTF-8",
        }
        self.state = self.home / ".local" / "state" / "frontdesk"

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "frontdesk.cli.main", *args]

    def cli(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(*args),
            env={**self.env, **(env or {})},
            cwd=self.work,
            capture_output=True,
            text=True,
            timeout=120,
        )

    def gateway_pid(self) -> int | None:
        try:
            return int((self.state / "gateway.lock").read_text().strip())
        except (OSError, ValueError):
            return None

    def stop(self) -> None:
        pid = self.gateway_pid()
        if pid is None:
            return
        started = _start_ticks(pid)  # the pid names this gateway only while its start time is the same
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and _start_ticks(pid) == started:
            time.sleep(0.05)
        if started is not None and _start_ticks(pid) == started:  # never left running into the next test
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _start_ticks(pid: int) -> str | None:
    """When process `pid` started (field 22 of /proc/PID/stat), None once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


@pytest.fixture
def fresh() -> Iterator[Fresh]:
    root = Path(tempfile.mkdtemp(prefix="fd-auto-", dir="/tmp"))
    made = Fresh(root)
    yield made
    made.stop()
    subprocess.run(["rm", "-rf", "--", str(root)], check=False)


def test_first_run_starts_the_gateway_and_says_so_once(fresh: Fresh) -> None:
    assert not (fresh.run_dir / "frontdesk").exists()
    first = fresh.cli("run", "--wait", "--", "echo", "hi")
    assert first.returncode == 0, first.stderr
    assert "hi" in first.stdout
    assert first.stderr.count(STARTED) == 1
    assert str(fresh.state / "gateway.log") in first.stderr
    pid = fresh.gateway_pid()
    assert pid is not None and Path(f"/proc/{pid}").exists()
    assert os.getsid(pid) == pid  # detached: its own session, not the client's
    assert os.readlink(f"/proc/{pid}/cwd") == str(fresh.state)  # not holding the user's directory

    again = fresh.cli("run", "--wait", "--json", "--", "echo", "again")
    assert again.returncode == 0, again.stderr
    assert STARTED not in again.stderr
    assert fresh.gateway_pid() == pid
    status = fresh.cli("status", "--json")
    assert status.returncode == 0 and STARTED not in status.stderr


def test_two_clients_at_once_start_one_gateway(fresh: Fresh) -> None:
    procs = [
        subprocess.Popen(
            fresh.argv("run", "--wait", "--", "echo", word),
            env=fresh.env,
            cwd=fresh.work,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for word in ("one", "two", "three")
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    for (out, err), word, p in zip(outs, ("one", "two", "three"), procs, strict=True):
        assert p.returncode == 0, err
        assert word in out
    assert sum(err.count(STARTED) for _, err in outs) == 1
    log = (fresh.state / "gateway.log").read_text()
    assert log.count("frontdesk gateway on") == 1  # one gateway ever started, not one that lost a race


def test_no_autostart_where_the_client_was_pointed_or_told_not_to(fresh: Fresh) -> None:
    pointed = fresh.cli("status", env={"FRONTDESK_SOCKET": str(fresh.root / "elsewhere.sock")})
    assert pointed.returncode == 69 and STARTED not in pointed.stderr
    told = fresh.cli("status", env={"FRONTDESK_NO_AUTOSTART": "1"})
    assert told.returncode == 69 and STARTED not in told.stderr
    assert fresh.gateway_pid() is None


def test_a_gateway_that_cannot_start_is_one_line_with_its_reason(fresh: Fresh) -> None:
    bad = fresh.root / "bad.toml"
    bad.write_text("[gateway\n")
    res = fresh.cli("run", "--", "true", env={"FRONTDESK_CONFIG": str(bad)})
    assert res.returncode == 69, res.stderr
    assert res.stderr.startswith("frontdesk: could not start a gateway:")
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr


def test_a_guard_check_or_an_opted_out_client_never_starts_one(fresh: Fresh, monkeypatch: pytest.MonkeyPatch) -> None:
    # A stale socket (a gateway that died): connecting is refused, which would start one for other calls.
    (fresh.run_dir / "frontdesk").mkdir(mode=0o700)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(fresh.run_dir / "frontdesk" / "gateway.sock"))
    stale.close()
    check = fresh.cli(
        "guard", "check", "--json", "--", "git", "push", "--force", "origin", "main"
    )  # checked, never run
    assert STARTED not in check.stderr
    assert fresh.gateway_pid() is None
    for key in [k for k in os.environ if k.startswith("FRONTDESK_")]:
        monkeypatch.delenv(key)
    for key, value in fresh.env.items():
        monkeypatch.setenv(key, value)
    from frontdesk.client import Client
    from frontdesk.errors import GatewayUnavailable

    with pytest.raises(GatewayUnavailable):
        Client(autostart=False).health()
    assert fresh.gateway_pid() is None
