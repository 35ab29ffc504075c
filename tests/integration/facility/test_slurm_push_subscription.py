"""Slurm pushes through the facility gateway (Slurm lab): the EpilogSlurmctld tells the root facility gateway, which
stores a `slurm.ended` event for the job's user; alice's and bob's own gateways (run as them, on the Slurm backend,
with a 600 s tick so only a push can tell them early) subscribe over its Unix socket and each gets only its own
user's job ends, also after a kill -9 of either gateway (resuming from the last event id they handled).

Real users alice and bob, real gateways, the lab's real EpilogSlurmctld (`frontdesk notify --targets-dir`, where
the facility gateway registers; the users' gateways register nothing there: they subscribe).
"""

from __future__ import annotations

import grp
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from facility_helpers import ROOT, SITE_PACKAGES, SYSTEM_PY, run_as

from frontdesk.client import Client
from frontdesk.errors import FrontdeskError
from unix_users import reachable

pytestmark = pytest.mark.slurm

USERS = ("alice", "bob")
PUSHED = "facility push: Slurm job(s) "


@dataclass
class Gw:
    """One gateway process: the facility's (root) or a user's."""

    user: str
    dir: Path
    env: dict[str, str]
    argv: list[str]
    proc: subprocess.Popen[bytes] | None = None
    log_marks: list[int] = field(default_factory=list)

    @property
    def socket(self) -> Path:
        return self.dir / "run" / "gateway.sock"

    @property
    def log_file(self) -> Path:
        return self.dir / "gateway.log"

    def start(self) -> None:
        pw = pwd.getpwnam(self.user)
        groups = [g.gr_gid for g in grp.getgrall() if self.user in g.gr_mem]
        with open(self.log_file, "ab") as log:
            self.proc = subprocess.Popen(
                self.argv,
                env=self.env,
                stdout=log,
                stderr=log,
                cwd=self.dir,
                start_new_session=True,
                **({} if self.user == "root" else {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": groups}),
            )
        opened = self.log().count("facility subscription open")
        deadline = time.monotonic() + 60
        while not self.answers() or (self.user != "root" and self.log().count("facility subscription open") == opened):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{self.user}'s gateway did not start (or subscribe):\n{self.log()[-3000:]}")
            time.sleep(0.1)

    def answers(self) -> bool:
        if self.user == "root":
            try:
                Client(socket_path=self.socket, timeout=5).health()
                return True
            except FrontdeskError:
                return False
        return bool(self.socket.exists() and self.call([{"method": "GET", "path": "/v1/health"}])[0][0] == 200)

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill9()

    def log(self) -> str:
        return self.log_file.read_text(errors="replace")

    def pushed(self) -> list[str]:
        """The Slurm ids this gateway was told of by the facility gateway (its log's push lines)."""
        out = []
        for line in self.log().splitlines():
            if PUSHED in line:
                out += line.split(PUSHED, 1)[1].split(" ended", 1)[0].split(",")
        return out

    def call(self, calls: list[dict[str, Any]]) -> list[Any]:
        """HTTP calls to a user's own gateway, as that user."""
        script = reachable(Path(__file__).with_name("probe.py"))
        r = run_as(
            self.user, [SYSTEM_PY, str(script)], env={"FRONTDESK_SOCKET": str(self.socket)}, input=json.dumps(calls)
        )
        assert r.returncode == 0, r.stderr
        out: list[Any] = json.loads(r.stdout)
        return out


@dataclass
class Site:
    facility: Gw
    users: dict[str, Gw]


def _facility(d: Path, site: Path) -> Gw:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("FRONTDESK_")},
        "FRONTDESK_HOME": str(d / "home"),
        "FRONTDESK_SITE_CONFIG": str(site),
        "FRONTDESK_SLURM_LAB": os.environ["FRONTDESK_SLURM_LAB"],
    }
    argv = [sys.executable, "-m", "frontdesk.cli.main", "serve", "--log-level", "info"]
    return Gw("root", d, env, argv)


def _user_gateway(user: str, base: Path, site: Path) -> Gw:
    d = base / user
    d.mkdir(mode=0o700)
    pw = pwd.getpwnam(user)
    os.chown(d, pw.pw_uid, pw.pw_gid)
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": pw.pw_dir,
        "USER": user,
        "LANG": "C.UTF-8",
        "PYTHONPATH": f"{reachable(ROOT / 'src')}:{reachable(SITE_PACKAGES)}",
        "PYTHONDONTWRITEBYTECODE": "1",
        "SLURM_CONF": os.environ["SLURM_CONF"],
        "FRONTDESK_SITE_CONFIG": str(site),  # names the facility gateway, which it subscribes to
        "FRONTDESK_MODE": "user",
        "FRONTDESK_HOME": str(d / "home"),
        "FRONTDESK_SOCKET": str(d / "run" / "gateway.sock"),
        "FRONTDESK_TICK": "600",  # a job's end reaches it early only by push
        "FRONTDESK_NO_AUTOSTART": "1",
    }
    argv = [SYSTEM_PY, "-m", "frontdesk.cli.main", "serve", "--log-level", "info"]
    return Gw(user, d, env, argv)


@pytest.fixture(scope="module")
def site(slurm_lab: Path, facility_users: dict[str, int]) -> Iterator[Site]:
    base = Path(tempfile.mkdtemp(prefix="fdpush-", dir="/tmp"))
    base.chmod(0o755)
    fac_dir = base / "facility"
    fac_dir.mkdir()
    conf = base / "frontdesk.toml"
    conf.write_text(
        f'[gateway]\nmode = "facility"\nsocket = "{fac_dir / "run" / "gateway.sock"}"\nbackend = "slurm"\n'
        'plugins = ["slurm"]\n'
    )
    conf.chmod(0o644)
    gws = Site(_facility(fac_dir, conf), {u: _user_gateway(u, base, conf) for u in USERS})
    try:
        gws.facility.start()
        for gw in gws.users.values():
            gw.start()
        yield gws
    finally:
        for gw in [*gws.users.values(), gws.facility]:
            gw.stop()
        subprocess.run(["scancel", "--name=fdpush-test"], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


def _submit(gw: Gw, seconds: int) -> tuple[int, str]:
    """A `sleep` job through the user's own gateway: (frontdesk id, Slurm id)."""
    body = {"spec": {"command": ["sleep", str(seconds)], "name": "fdpush-test"}, "context": {"cwd": "/tmp"}}
    status, job = gw.call([{"method": "POST", "path": "/v1/jobs", "body": body}])[0]
    assert status == 200, job
    for _ in range(600):
        status, rec = gw.call([{"method": "GET", "path": f"/v1/jobs/{job['id']}"}])[0]
        if status == 200 and rec.get("backend_id"):
            return int(job["id"]), str(rec["backend_id"])
        time.sleep(0.1)
    raise AssertionError(f"job {job['id']} never reached sbatch: {rec}")


def _wait(gw: Gw, job_id: int) -> dict[str, Any]:
    """The job's record once its gateway knows it ended (a 600 s tick: only a push tells it within 120 s)."""
    status, answer = gw.call([{"method": "POST", "path": "/v1/wait", "body": {"ids": [job_id], "timeout": 120}}])[0]
    assert status == 200 and answer["done"], (answer, gw.log()[-2000:])
    rec: dict[str, Any] = gw.call([{"method": "GET", "path": f"/v1/jobs/{job_id}"}])[0][1]
    return rec


def _slurm_ended(bid: str) -> None:
    for _ in range(600):
        out = subprocess.run(["scontrol", "-o", "show", "job", bid], capture_output=True, text=True).stdout
        if "JobState=COMPLETED" in out:
            return
        time.sleep(0.1)
    raise AssertionError(f"Slurm job {bid} did not complete")


def _stored(site: Site, bid: str) -> dict[str, Any]:
    """The facility gateway's stored `slurm.ended` event for a Slurm id (it is stored before it is sent)."""
    root = Client(socket_path=site.facility.socket, timeout=10)
    for _ in range(300):
        for event in root.request("GET", "/v1/events?since=0&kind=slurm.ended"):
            if bid in event["data"]["slurm_ids"]:
                found: dict[str, Any] = event
                return found
        time.sleep(0.1)
    raise AssertionError(f"no slurm.ended event for {bid}:\n{site.facility.log()[-2000:]}")


def _never_crossed(site: Site, own: dict[str, list[str]]) -> None:
    for user, gw in site.users.items():
        others = {b for u, bids in own.items() if u != user for b in bids}
        assert not others & set(gw.pushed()), (user, gw.pushed())


def test_each_users_gateway_gets_its_own_job_ends_by_push_never_anothers(site: Site) -> None:
    jobs = {u: _submit(gw, 2) for u, gw in site.users.items()}
    for user, gw in site.users.items():
        job_id, bid = jobs[user]
        rec = _wait(gw, job_id)
        assert rec["state"] == "COMPLETED", rec
        assert bid in gw.pushed(), gw.log()[-2000:]
        event = _stored(site, bid)
        assert event["principal"] == user and event["data"]["uid"] == pwd.getpwnam(user).pw_uid
    _never_crossed(site, {u: [bid] for u, (_, bid) in jobs.items()})
    registered = [p.read_text().strip() for p in Path(os.environ["FRONTDESK_SLURM_LAB"], "gateways").iterdir()]
    assert str(site.facility.socket) in registered  # the controller knows the facility gateway only
    assert not {str(gw.socket) for gw in site.users.values()} & set(registered)


def test_a_users_gateway_killed_9_gets_the_end_it_missed_from_its_cursor(site: Site) -> None:
    alice, bob = site.users["alice"], site.users["bob"]
    job_id, bid = _submit(alice, 4)
    _, bobs = _submit(bob, 4)
    alice.kill9()  # the job ends while alice's gateway is down
    _slurm_ended(bid)
    event = _stored(site, bid)
    cursor = json.loads((alice.dir / "home" / "facility-cursor.json").read_text())
    assert cursor["seq"] < event["seq"]
    alice.start()
    rec = _wait(alice, job_id)
    assert rec["state"] == "COMPLETED", rec
    for _ in range(300):  # the replay: a fresh subscription would have started at the head and missed it
        if alice.pushed().count(bid) == 1:
            break
        time.sleep(0.1)
    assert alice.pushed().count(bid) == 1, alice.log()[-3000:]
    assert json.loads((alice.dir / "home" / "facility-cursor.json").read_text())["seq"] >= event["seq"]
    _stored(site, bobs)
    _never_crossed(site, {"alice": [bid], "bob": [bobs]})


def test_after_the_facility_gateway_is_killed_9_users_gateways_resubscribe(site: Site) -> None:
    alice, bob = site.users["alice"], site.users["bob"]
    opened = {u: gw.log().count("facility subscription open") for u, gw in site.users.items()}
    site.facility.kill9()  # the users' subscriptions break
    site.facility.start()  # same state directory and socket: its journal goes on
    job_id, bid = _submit(alice, 2)
    bob_id, bobs = _submit(bob, 2)
    for gw, jid, b in ((alice, job_id, bid), (bob, bob_id, bobs)):
        rec = _wait(gw, jid)
        assert rec["state"] == "COMPLETED", rec
        assert b in gw.pushed(), gw.log()[-3000:]
    _never_crossed(site, {"alice": [bid], "bob": [bobs]})
    assert all(gw.log().count("facility subscription open") > opened[u] for u, gw in site.users.items())
