"""The facility gateway's fan-out of Slurm job ends, without Slurm: a notifier's (root's) `POST /v1/notify` naming a
job's user is stored as a `slurm.ended` event, and a user's subscription (`frontdesk.facility_subscribe`, run as
that user over the Unix socket) receives only its own user's, resuming from its cursor. Real users alice, bob."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from facility_helpers import SYSTEM_PY, Facility, user_env

from unix_users import reachable

ADMIN = "fdadmin-user"


def _notify(fac: Facility, ids: list[str], **info: str) -> None:
    answer = fac.root_client().request("POST", "/v1/notify", {"backend": "slurm", "ids": ids, "info": info})
    assert answer["ok"] is True


_HOMES: list[Path] = []


@pytest.fixture(autouse=True)
def _remove_homes() -> Iterator[None]:
    yield
    while _HOMES:
        shutil.rmtree(_HOMES.pop(), ignore_errors=True)


def _home(user: str) -> Path:
    """A state directory of `user`'s (in /tmp: the user cannot enter pytest's root-owned tmp_path)."""
    d = Path(tempfile.mkdtemp(prefix=f"fdsub-{user}-", dir="/tmp"))
    _HOMES.append(d)
    pw = pwd.getpwnam(user)
    os.chown(d, pw.pw_uid, pw.pw_gid)
    return d


def _subscribe(fac: Facility, user: str, home: Path, n: int, *tcp: str) -> subprocess.Popen[str]:
    """A subscriber run as `user`; returns once its subscription is open (its cursor is on disk). With `tcp`
    (a missing socket path and the facility's URL) it subscribes over TCP with MUNGE."""
    script = reachable(Path(__file__).with_name("subscriber.py"))
    where = list(tcp) if tcp else [str(fac.socket)]
    argv = ["runuser", "-u", user, "--", *user_env(user), SYSTEM_PY, str(script), where[0], str(home), str(n)]
    argv += where[1:]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd="/tmp")
    for _ in range(600):
        if (home / "facility-cursor.json").exists() or proc.poll() is not None:
            break
        time.sleep(0.05)
    assert (home / "facility-cursor.json").exists(), proc.communicate(timeout=5)
    return proc


def _pushes(proc: subprocess.Popen[str]) -> list[list[str]]:
    out, err = proc.communicate(timeout=90)
    assert proc.returncode == 0, err
    return [json.loads(line) for line in out.splitlines()]


def _events(fac: Facility, since: int) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = fac.root_client().request("GET", f"/v1/events?since={since}&kind=slurm.ended")
    return found


def test_each_subscriber_gets_only_its_users_job_ends_and_resumes_from_its_cursor(facility: Facility) -> None:
    first_bob = _subscribe(facility, "bob", _home("bob"), 1)  # bob's gateway has subscribed once: his ends are kept
    _notify(facility, ["9100"], SLURM_JOB_USER="bob")
    assert _pushes(first_bob) == [["9100"]]
    since = facility.root_client().health()["last_seq"]
    alice_home = _home("alice")
    alice = _subscribe(facility, "alice", alice_home, 2)
    _notify(facility, ["9101"], SLURM_JOB_USER="alice", SLURM_JOB_UID=str(pwd.getpwnam("alice").pw_uid))
    _notify(facility, ["9102"], SLURM_JOB_USER="bob")
    _notify(facility, ["x;y", "../9"], SLURM_JOB_USER="alice")  # no valid id: nothing stored
    _notify(facility, ["9109"], SLURM_JOB_USER="fd-no-such-user")  # nobody's: nothing stored
    _notify(facility, ["9108"], SLURM_JOB_USER=ADMIN)  # a user whose gateway never subscribed: kept for nobody
    _notify(facility, ["9103_4", "9110"], SLURM_JOB_USER="alice", SLURM_JOB_EXIT_CODE2="3:0")
    assert _pushes(alice) == [["9101"], ["9103_4", "9110"]]  # never bob's 9102
    stored = _events(facility, since)
    assert [(e["principal"], e["data"]["slurm_ids"]) for e in stored] == [
        ("alice", ["9101"]),
        ("bob", ["9102"]),
        ("alice", ["9103_4", "9110"]),
    ]
    assert stored[2]["data"]["exit_code"] == "3:0"
    subscribers = json.loads((facility.dir / "home" / "facility-subscribers.json").read_text())
    assert {pwd.getpwnam(u).pw_uid for u in ("alice", "bob")} <= set(subscribers)
    assert pwd.getpwnam(ADMIN).pw_uid not in subscribers
    # while alice's subscriber is down, her job ends are stored; she gets them from her cursor, nothing twice
    _notify(facility, ["9104"], SLURM_JOB_USER="bob")
    _notify(facility, ["9105"], SLURM_JOB_USER="alice")
    again = _subscribe(facility, "alice", alice_home, 1)
    assert _pushes(again) == [["9105"]]
    # a first subscription (no cursor) starts at the journal's head: bob's 9102 and 9104 are not replayed
    bob = _subscribe(facility, "bob", _home("bob"), 1)
    _notify(facility, ["9106"], SLURM_JOB_USER="bob")
    assert _pushes(bob) == [["9106"]]


def test_only_notifiers_fan_out(facility: Facility) -> None:
    since = facility.root_client().health()["last_seq"]
    body = {"backend": "slurm", "ids": ["9201"], "info": {"SLURM_JOB_USER": "bob"}}
    status, answer = facility.probe("alice", [{"method": "POST", "path": "/v1/notify", "body": body}])[0]
    assert (status, answer) == ("forbidden", "alice may not notify the gateway")
    assert _events(facility, since) == []  # a user cannot forge another's job end


def test_a_per_user_gateway_neither_fans_out_nor_streams(gateway: Any) -> None:
    from frontdesk.errors import Forbidden

    since = gateway.client.health()["last_seq"]
    body = {"backend": "slurm", "ids": ["9301"], "info": {"SLURM_JOB_USER": "alice"}}
    assert gateway.client.request("POST", "/v1/notify", body)["ok"] is True
    assert gateway.client.request("GET", f"/v1/events?since={since}&kind=slurm.ended") == []
    with pytest.raises(Forbidden, match="only a facility gateway"):
        gateway.client.request("GET", "/v1/facility/slurm-events")


def test_a_user_cannot_hoard_subscriptions(facility: Facility) -> None:
    from frontdesk.api.facility import MAX_PER_USER

    script = reachable(Path(__file__).with_name("hoarder.py"))
    argv = [SYSTEM_PY, str(script), str(facility.socket), str(MAX_PER_USER + 2)]
    done = subprocess.run(
        ["runuser", "-u", "carol", "--", *user_env("carol"), *argv], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["statuses"] == [200] * MAX_PER_USER + [429, 429]
    assert got["later"] == 200  # closed streams are given back


def test_a_gateway_on_another_host_subscribes_over_tcp_with_munge(facility: Facility) -> None:
    missing = str(facility.dir / "not-on-this-host" / "gateway.sock")  # the facility's socket is elsewhere
    bob = _subscribe(facility, "bob", _home("bob"), 1)  # bob's gateway has subscribed: his job ends are stored
    _notify(facility, ["9400"], SLURM_JOB_USER="bob")
    assert _pushes(bob) == [["9400"]]
    alice_home = _home("alice")
    alice = _subscribe(facility, "alice", alice_home, 1, missing, facility.url)
    _notify(facility, ["9401"], SLURM_JOB_USER="bob")  # stored first: had it leaked, it would be her first push
    _notify(facility, ["9402"], SLURM_JOB_USER="alice")
    assert _pushes(alice) == [["9402"]]  # her own job end, over TCP: MUNGE said who she is
    # a new connection takes a fresh credential (the facility refuses a replayed one) and resumes from the cursor
    _notify(facility, ["9403"], SLURM_JOB_USER="alice")
    again = _subscribe(facility, "alice", alice_home, 1, missing, facility.url)
    assert _pushes(again) == [["9403"]]
