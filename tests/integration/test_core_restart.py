"""Restart safety, the event journal and TCP access, against real gateway processes."""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from frontdesk.client import Client
from frontdesk.errors import FrontdeskError

PY = sys.executable


@pytest.fixture(autouse=True)
def _plugins(monkeypatch) -> None:
    # the real configuration (every plug-in) unless FRONTDESK_TEST_PLUGINS narrows it, e.g. to "none"
    if "FRONTDESK_TEST_PLUGINS" in os.environ:
        monkeypatch.setenv("FRONTDESK_PLUGINS", os.environ["FRONTDESK_TEST_PLUGINS"])
    else:
        monkeypatch.delenv("FRONTDESK_PLUGINS", raising=False)


def test_kill9_mid_run_loses_nothing_and_starts_nothing_twice(gateway, workdir: Path) -> None:
    c = gateway.client
    runs = workdir / "runs"
    gate = workdir / "gate"
    ids = []
    for i in range(4):
        cmd = (
            f"echo {i} >> {shlex.quote(str(runs))}; "
            f"while [ ! -e {shlex.quote(str(gate))} ]; do sleep 0.05; done; echo done {i}"
        )
        ids.append(
            c.submit(spec={"name": f"j{i}", "command": ["/bin/sh", "-c", cmd]}, context={"cwd": str(workdir)})["id"]
        )
    dependent = c.submit(
        spec={"depends_on": [ids[0]], "command": ["/bin/sh", "-c", "echo after"]}, context={"cwd": str(workdir)}
    )["id"]
    gateway.wait_state(ids[0], {"RUNNING"})
    gateway.wait_state(ids[1], {"RUNNING"})
    seq_before = c.health()["last_seq"]
    gateway.kill9()
    gate.touch()  # the running jobs end while the gateway is down
    time.sleep(1.0)
    gateway.start()
    res = c.wait([*ids, dependent], "all", 60)
    assert res["done"]
    states = {r["job_id"]: r["state"] for r in res["reports"]}
    assert all(s == "COMPLETED" for s in states.values()), states
    assert sorted(runs.read_text().split()) == ["0", "1", "2", "3"], "a job started twice or not at all"
    assert c.report(ids[0])["stdout_tail"] == ["done 0"]
    events = list(c.events(since=0))
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(seqs) and len(seqs) == len(set(seqs)) and seqs[-1] > seq_before
    assert [e["kind"] for e in events].count("job.report") == 5


def test_waiter_reconnects_after_restart(gateway, workdir: Path) -> None:
    c = gateway.client
    gate = workdir / "gate"
    job = c.submit(
        spec={"command": ["/bin/sh", "-c", f"while [ ! -e {shlex.quote(str(gate))} ]; do sleep 0.05; done"]},
        context={"cwd": str(workdir)},
    )["id"]
    gateway.wait_state(job, {"RUNNING"})
    waiter = subprocess.Popen(
        [PY, "-m", "frontdesk.cli.main", "wait", str(job), "--json"],
        env=gateway.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _until_parked(waiter)  # a fixed 0.5 s let a slow CLI start after the kill: a refused connection, not a break
    gateway.kill9()
    out, err = waiter.communicate(timeout=30)
    assert waiter.returncode == 69 and "Traceback" not in err  # the gateway went away: one line, exit 69
    gate.touch()
    gateway.start()
    r = gateway.cli("wait", str(job), "--json", "--timeout", "30")
    assert r.returncode == 0 and json.loads(r.stdout)["reports"][0]["state"] == "COMPLETED"


def test_pending_queue_survives_kill9(gateway_factory, workdir: Path) -> None:
    gw = gateway_factory(config="[local]\ncpus = 1\n")
    c = gw.client
    runs = workdir / "runs"
    ids = [
        c.submit(
            spec={"command": ["/bin/sh", "-c", f"echo x >> {shlex.quote(str(runs))}; sleep 0.3"]},
            context={"cwd": str(workdir)},
        )["id"]
        for _ in range(3)
    ]
    gw.kill9()
    gw.start()
    res = c.wait(ids, "all", 60)
    assert [r["state"] for r in res["reports"]] == ["COMPLETED"] * 3
    assert runs.read_text().split() == ["x", "x", "x"]


def test_second_gateway_on_same_home_is_refused(gateway) -> None:
    r = subprocess.run(
        [PY, "-m", "frontdesk.cli.main", "serve"], env=gateway.env, capture_output=True, text=True, timeout=30
    )
    assert r.returncode != 0 and "already" in r.stderr and "Traceback" not in r.stderr
    assert gateway.client.health()["ok"]


def test_events_follow_resumes_from_seq(gateway, workdir: Path) -> None:
    c = gateway.client
    first = c.submit(spec={"command": ["true"]}, context={"cwd": str(workdir)})["id"]
    c.wait([first], "all", 30)
    last = max(e["seq"] for e in c.events(since=0))
    got: list[dict] = []

    def follow() -> None:
        for event in Client(socket_path=gateway.socket).events(since=last, follow=True):
            got.append(event)
            if event["kind"] == "job.report":
                return

    t = threading.Thread(target=follow, daemon=True)
    t.start()
    second = c.submit(spec={"command": ["true"]}, context={"cwd": str(workdir)})["id"]
    t.join(30)
    assert not t.is_alive()
    assert all(e["seq"] > last for e in got) and {e["job_id"] for e in got} == {second}
    assert [e["kind"] for e in got][0] == "job.submitted" and got[-1]["kind"] == "job.report"
    r = gateway.cli("events", "--since", str(last), "--json")
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert [e["seq"] for e in lines] == [e["seq"] for e in got]


def test_socket_is_owner_only(gateway) -> None:
    mode = os.stat(gateway.socket).st_mode & 0o777
    assert mode == 0o600
    assert os.stat(gateway.socket.parent).st_mode & 0o077 == 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_tcp_listen_requires_token(gateway_factory, workdir: Path) -> None:
    port = _free_port()
    cfg = '[gateway]\ntoken = "s3cret-token"\n[gateway.tokens]\n"bob-token" = "bob"\n'
    gw = gateway_factory(config=cfg, args=["--listen", f"127.0.0.1:{port}"])
    url = f"http://127.0.0.1:{port}"
    with pytest.raises(FrontdeskError) as exc:
        Client(url=url, token="wrong").health()
    assert "token" in exc.value.message
    owner = Client(url=url, token="s3cret-token")
    job = owner.submit(spec={"command": ["true"]}, context={"cwd": str(workdir)})
    bob = Client(url=url, token="bob-token")
    bjob = bob.submit(spec={"command": ["true"]}, context={"cwd": str(workdir)})
    assert bjob["principal"] == "bob" and job["principal"] != "bob"
    r = gw.cli("status", "--json", env={"FRONTDESK_URL": url, "FRONTDESK_TOKEN": "s3cret-token"})
    assert r.returncode == 0 and len(json.loads(r.stdout)) == 2


def test_listen_without_token_is_refused(gateway_factory) -> None:
    gw = gateway_factory(start=False, args=["--listen", f"127.0.0.1:{_free_port()}"])
    r = subprocess.run(
        [PY, "-m", "frontdesk.cli.main", "serve", *gw.args], env=gw.env, capture_output=True, text=True, timeout=30
    )
    assert r.returncode == 2 and "token" in r.stderr and r.stderr.count("\n") == 1


def _until_parked(proc: subprocess.Popen[str], timeout: float = 30.0) -> None:
    """Until the waiter has connected and sleeps in its read (a loaded machine can take over a second to start a
    fresh CLI; stopping the gateway before then tests a refused connection, not a parked waiter)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the waiter ended before it parked"
        try:
            fds = [os.readlink(f"/proc/{proc.pid}/fd/{fd}") for fd in os.listdir(f"/proc/{proc.pid}/fd")]
            state = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            fds, state = [], ""
        if any(fd.startswith("socket:") for fd in fds) and state == "S":
            time.sleep(0.3)  # its request reaches the gateway's wait (a local socket write: well under this)
            return
        time.sleep(0.05)
    raise AssertionError("the waiter never parked")


def test_stopping_gateway_answers_waiters_with_503(gateway, workdir: Path) -> None:
    job = gateway.client.submit(spec={"command": ["sleep", "30"]}, context={"cwd": str(workdir)})["id"]
    waiter = subprocess.Popen(
        [PY, "-m", "frontdesk.cli.main", "wait", str(job)],
        env=gateway.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _until_parked(waiter)
    gateway.stop()
    out, err = waiter.communicate(timeout=60)
    assert waiter.returncode == 69, err
    assert err.strip() == "frontdesk: the gateway is shutting down; wait again once it is back"
