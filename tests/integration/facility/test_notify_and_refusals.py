"""`POST /v1/notify` is for the gateway's own shepherds, root and the named notifiers; every refusal of identity or
permission exits 77 with one line (a bad token on TCP included). Real users alice/carol/fdh6a/fdh6n, a root gateway."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from facility_helpers import Facility

from unix_users import ensure_user

FACILITY_ACCESS = 'notifiers = ["fdh6n"]  # stands in for a SlurmUser that is not root\n'


def _one(fac: Facility, user: str, method: str, path: str, body: Any = None, **env: str) -> list[Any]:
    out: list[Any] = fac.probe(user, [{"method": method, "path": path, "body": body}], env=env)[0]
    return out


@pytest.fixture(scope="module")
def h6_users(facility_users: dict[str, int]) -> tuple[str, str]:
    """fdh6a (an ordinary user) and fdh6n (the site's named notifier)."""
    ensure_user("fdh6a")
    ensure_user("fdh6n")
    return "fdh6a", "fdh6n"


def _events(fac: Facility, since: int, kind: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = fac.root_client().request("GET", f"/v1/events?since={since}&kind={kind}")
    return out


def test_notify_is_refused_to_users_and_a_bogus_one_only_re_queries(
    facility: Facility, h6_users: tuple[str, str]
) -> None:
    user, notifier = h6_users
    status, job = _one(
        facility, "alice", "POST", "/v1/jobs", {"spec": {"command": ["sleep", "300"]}, "context": {"cwd": "/tmp"}}
    )
    assert status == 200, job
    root = facility.root_client()
    rec = root.request("GET", f"/v1/jobs/{job['id']}")
    for _ in range(600):  # until the shepherd has started it (it has a backend id then)
        if rec["state"] == "RUNNING" and rec.get("backend_id"):
            break
        time.sleep(0.05)
        rec = root.request("GET", f"/v1/jobs/{job['id']}")
    assert rec["state"] == "RUNNING" and rec.get("backend_id"), rec
    since = root.health()["last_seq"]
    bogus = {"backend": "local", "ids": ["999999999", "../../etc/passwd", "x;y", str(rec["backend_id"])]}
    for who in ("alice", user):
        assert _one(facility, who, "POST", "/v1/notify", bogus) == ["forbidden", f"{who} may not notify the gateway"]
    refusals = _events(facility, since, "access.denied")
    assert [(e["principal"], e["data"]["action"], e["data"]["target"]) for e in refusals] == [
        ("alice", "notify", "the gateway"),
        (user, "notify", "the gateway"),
    ]
    # the gateway's own user (its shepherds) and the named notifier are heard; a bogus notify changes nothing
    assert root.request("POST", "/v1/notify", bogus) == {"ok": True, "changed": 0}
    assert _one(facility, notifier, "POST", "/v1/notify", bogus) == [200, {"ok": True, "changed": 0}]
    assert root.request("GET", f"/v1/jobs/{job['id']}")["state"] == "RUNNING"
    assert _one(facility, "alice", "POST", f"/v1/jobs/{job['id']}/cancel", {})[0] == 200


def test_the_shepherds_own_notify_is_still_taken(facility: Facility) -> None:
    since = facility.root_client().health()["last_seq"]
    status, job = _one(
        facility, "carol", "POST", "/v1/jobs", {"spec": {"command": ["true"]}, "context": {"cwd": "/tmp"}}
    )
    assert status == 200
    done = _one(facility, "carol", "POST", "/v1/wait", {"ids": [job["id"]], "timeout": 60})
    assert done[0] == 200 and done[1]["reports"][0]["state"] == "COMPLETED"
    notify_refusals = [e for e in _events(facility, since, "access.denied") if e["data"]["action"] == "notify"]
    assert notify_refusals == []  # the root shepherd's notify passed


def test_a_bad_token_on_tcp_exits_77_with_one_line(facility: Facility) -> None:
    env = {"FRONTDESK_URL": facility.url, "FRONTDESK_TOKEN": "not-a-token"}
    r = facility.cli("carol", "status", "1", env=env)
    assert (r.returncode, r.stdout, r.stderr) == (
        77,
        "",
        "frontdesk: a valid bearer token or MUNGE credential is required\n",
    )
    r = facility.cli("carol", "status", "1", "--json", env=env)
    assert r.returncode == 77 and json.loads(r.stdout) == {
        "error": "unauthenticated",
        "message": "a valid bearer token or MUNGE credential is required",
    }


def test_every_permission_refusal_of_the_cli_exits_77(facility: Facility) -> None:
    lesson = _one(
        facility,
        "alice",
        "POST",
        "/v1/memory/lessons",
        {"kind": "host_oom", "cause": "needs 64G", "template": "python train.py", "fix": "ask for 64G"},
    )
    assert lesson[0] == 200, lesson
    lab = _one(facility, "alice", "POST", f"/v1/memory/lessons/{lesson[1]['id']}/promote", {"scope": "lab"})
    assert lab[0] == 200, lab
    cases = [
        ("carol", ("policy", "reload"), "frontdesk: carol may not change the policy\n"),
        ("bob", ("memory", "forget", str(lab[1]["id"])), None),
        ("carol", ("memory", "promote", str(lesson[1]["id"]), "--scope", "cluster"), None),
    ]
    for user, args, line in cases:
        r = facility.cli(user, *args)
        want = 3 if args[1] == "promote" else 77  # a lesson carol cannot see is not found (no hint it exists)
        assert r.returncode == want, (user, args, r.stderr)
        assert r.stderr.count("\n") == 1 and r.stderr.startswith("frontdesk: "), r.stderr
        if line is not None:
            assert r.stderr == line


def test_another_users_per_user_gateway_is_a_permission_failure_not_an_outage(
    facility: Facility, gateway_factory: Any
) -> None:
    gw = gateway_factory()  # root's per-user gateway: its directory is 0700, its socket 0600
    r = facility.cli("carol", "status", "1", env={"FRONTDESK_SOCKET": str(gw.socket), "FRONTDESK_NO_AUTOSTART": "1"})
    assert (r.returncode, r.stdout) == (77, "")
    assert r.stderr == f"frontdesk: permission denied on the gateway socket {gw.socket}: it serves another user\n"
