"""Shared fixtures: a real gateway process under a temporary FRONTDESK_HOME, and the real CLI."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from frontdesk.client import Client
from frontdesk.config import Settings
from frontdesk.errors import GatewayUnavailable

PY = sys.executable

# Hypothesis checks behaviour, never speed: its default 200 ms deadline per example (and its "generation is too
# slow" health check) fail on a loaded CI machine for reasons that have nothing to do with the code under test.
# A test's own @settings still sets what it names; the rest comes from this profile.
hypothesis_settings.register_profile(
    "frontdesk", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
hypothesis_settings.load_profile("frontdesk")


@pytest.fixture(autouse=True)
def _no_thread_left_in_fifo_open() -> Iterator[None]:
    """Fail the test that leaves a thread blocked opening a FIFO. Any later subprocess this process starts can
    interrupt that open (a SIGCHLD that comes while subprocess's vfork blocks signals), the kernel restarts it
    on a path by then removed, and FileNotFoundError was reported in whatever unrelated test ran then."""
    from fifo_helpers import threads_in_fifo_open

    before = threads_in_fifo_open()
    yield
    left = threads_in_fifo_open() - before  # only this test's: an earlier leak was reported where it happened
    if left:
        names = sorted(name for _, name in left)
        pytest.fail(f"threads left blocked opening a FIFO (release them before the test ends): {names}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Remove the Unix users and groups tests made that no running test process uses any more."""
    from unix_users import release

    release()


class GatewayProc:
    """A real `frontdesk serve` process; restartable, killable with -9, with a client and the CLI."""

    def __init__(
        self, home: Path, config: str | None = None, env: dict[str, str] | None = None, args: list[str] | None = None
    ) -> None:
        self.home = home
        self.args = args or []
        self.env = {**os.environ, "FRONTDESK_HOME": str(home), "FRONTDESK_NO_AUTOSTART": "1", **(env or {})}
        for key in ("FRONTDESK_SOCKET", "FRONTDESK_URL", "FRONTDESK_TOKEN", "FRONTDESK_CONFIG"):
            if key not in (env or {}):
                self.env.pop(key, None)
        if config is not None:
            (home / "frontdesk.toml").write_text(config)
            (home / "frontdesk.toml").chmod(0o600)  # a config holding tokens must be 0600 (else refused)
        self.socket = home / "run" / "gateway.sock"
        self.client = Client(socket_path=self.socket, timeout=30)
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> GatewayProc:
        log = open(self.home / "gateway.log", "ab")
        self.proc = subprocess.Popen(
            [PY, "-m", "frontdesk.cli.main", "serve", "--log-level", "info", *self.args],
            env=self.env,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.client.health()
                return self
            except GatewayUnavailable:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("gateway did not start:\n" + self.log()[-3000:]) from None
                time.sleep(0.05)

    def log(self) -> str:
        return (self.home / "gateway.log").read_text(errors="replace")

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def restart(self) -> GatewayProc:
        self.stop()
        return self.start()

    def cli(
        self,
        *args: str,
        input: str | None = None,
        timeout: float = 120,
        env: dict[str, str] | None = None,
        cwd: str | Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run the real CLI as a fresh process against this gateway."""
        return subprocess.run(
            [PY, "-m", "frontdesk.cli.main", *args],
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            input=input,
            timeout=timeout,
            cwd=str(cwd) if cwd else None,
        )

    def wait_state(self, job_id: int, states: set[str], timeout: float = 30) -> dict[str, Any]:
        """Test helper: until the job reaches one of `states` (reads the journal, not a hidden sleep)."""
        deadline = time.monotonic() + timeout
        while True:
            job = self.client.job(job_id)
            if job["state"] in states:
                return job
            if time.monotonic() > deadline:
                raise AssertionError(f"job {job_id} stuck in {job['state']}, wanted {states}")
            time.sleep(0.05)


def _short_home() -> Path:
    # Unix socket paths are limited to 107 bytes: keep homes short.
    return Path(tempfile.mkdtemp(prefix="fd-", dir="/tmp"))


@pytest.fixture
def gateway_factory() -> Iterator[Any]:
    """Make real gateways: `gateway_factory(config=..., env=..., args=...)`; all stopped afterwards."""
    made: list[GatewayProc] = []

    def make(
        config: str | None = None,
        env: dict[str, str] | None = None,
        args: list[str] | None = None,
        start: bool = True,
        home: Path | None = None,
    ) -> GatewayProc:
        gw = GatewayProc(home or _short_home(), config=config, env=env, args=args)
        made.append(gw)
        return gw.start() if start else gw

    yield make
    for gw in made:
        gw.stop()
        _kill_leftovers(gw.home)
        shutil.rmtree(gw.home, ignore_errors=True)


@pytest.fixture
def gateway(gateway_factory: Any) -> GatewayProc:
    """One real gateway on the embedded backend."""
    gw: GatewayProc = gateway_factory()
    return gw


def _kill_leftovers(home: Path) -> None:
    """Stop shepherds a test left running (so one test's jobs never hold another's resources)."""
    from leftovers import stop_shepherds

    stop_shepherds(home)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A job working directory whose path has a space and a quote in it."""
    d = tmp_path / "work dir 'quoted'"
    d.mkdir()
    return d


# -- the Slurm lab cluster (tests marked `slurm`) -------------------------------------------------------

ROOT = Path(__file__).resolve().parents[1]
LAB_SCRIPT = ROOT / "scripts" / "slurm-lab"


@pytest.fixture(scope="session")
def slurm_lab() -> Iterator[Path]:
    """A running lab cluster (SLURM_CONF exported); skips with one line where it cannot run."""
    if os.geteuid() != 0:
        pytest.skip("slurm lab needs root (scripts/slurm-lab up starts slurmctld/slurmd)")
    lab = Path(os.environ.get("FRONTDESK_SLURM_LAB", "/var/lib/frontdesk-slurm-lab"))
    done = subprocess.run([str(LAB_SCRIPT), "up"], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        pytest.fail(f"scripts/slurm-lab up failed:\n{done.stderr[-3000:]}")
    os.environ["SLURM_CONF"] = str(lab / "etc" / "slurm.conf")
    os.environ["FRONTDESK_SLURM_LAB"] = str(lab)
    yield lab


@pytest.fixture
def slurm_settings(slurm_lab: Path) -> Iterator[Settings]:
    """Settings for a SlurmBackend under a fresh home whose path has a space in it."""
    home = Path(tempfile.mkdtemp(prefix="fd slurm-", dir="/tmp"))
    yield Settings(
        home=home,
        runtime_dir=home / "run",
        socket=home / "run" / "gateway.sock",
        backend="slurm",
        sections={"slurm": {"conf": str(slurm_lab / "etc" / "slurm.conf"), "notify_dir": str(home / "notify")}},
    )


@pytest.fixture
def memory_enforced(slurm_lab: Path) -> None:
    """Skip (one line) where the lab could not enforce memory (no writable cgroup v1 memory controller)."""
    if "TaskPlugin=task/cgroup" not in (slurm_lab / "etc" / "slurm.conf").read_text():
        pytest.skip("the lab has no cgroup v1 memory controller here, so no OUT_OF_MEMORY")


HARNESS_NODE = Path(__file__).resolve().parent / "harness" / "node"


@pytest.fixture(scope="session")
def harness_node() -> Path:
    """tests/harness/node with the pinned agent binaries (claude, codex, gemini) installed: `npm ci` when missing,
    as CI's clean clone needs; skips with one line only where npm itself is absent."""
    bin_dir = HARNESS_NODE / "node_modules" / ".bin"
    if not all((bin_dir / b).exists() for b in ("claude", "codex")):
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("npm is not installed: cannot install the pinned agent binaries")
        cmd = [npm, "ci", "--prefix", str(HARNESS_NODE), "--no-audit", "--no-fund"]
        subprocess.run(cmd, check=True, capture_output=True, timeout=600)
    return bin_dir
