"""identity.py and api/access.py without a gateway: tokens, roles, the access rules, unmunge, rendezvous checks."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest

from frontdesk.api.access import Access, Action
from frontdesk.errors import ConfigError, Forbidden, RendezvousRefused
from frontdesk.events.models import Event, EventKind
from frontdesk.identity import Caller, Roles, TokenTable, Via, hash_token, peer_credentials, unmunge_credential
from frontdesk.paths import check_rendezvous


def test_tokens_are_kept_hashed_and_a_file_is_reread_when_it_changes(tmp_path: Path) -> None:
    f = tmp_path / "tokens"
    f.write_text(f"alice {hash_token('a-tok')}\n# comment\n{hash_token('b-tok')} bob\n")
    f.chmod(0o600)
    table = TokenTable({"plain-tok": "carol"}, f)
    assert [table.user_for(t) for t in ("a-tok", "b-tok", "plain-tok", "nope", "")] == [
        "alice",
        "bob",
        "carol",
        None,
        None,
    ]
    assert "plain-tok" not in repr(vars(table)) and "a-tok" not in repr(vars(table))
    f.write_text(f"alice {hash_token('a-tok')}\n")  # bob revoked
    os.utime(f, (1, 1))
    assert table.user_for("b-tok") is None and table.user_for("a-tok") == "alice"
    f.chmod(0o644)  # a file others can read revokes everything it held
    assert table.user_for("a-tok") is None and table.user_for("plain-tok") == "carol"


def test_a_tokens_file_others_can_read_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "tokens"
    f.write_text("alice sha256:" + "0" * 64 + "\n")
    f.chmod(0o640)
    with pytest.raises(ConfigError, match=r"mode 0640: it holds tokens, so it must be 0600"):
        TokenTable({}, f)


def test_roles_from_the_access_table() -> None:
    roles = Roles.from_section(
        {"admins": ["ops"], "admins_group": "fdadmin", "labs": {"physics": ["alice", "carol"]}, "lab_groups": ["lab1"]}
    )
    assert roles.labs_of("alice", ["alice", "lab1", "other"]) == ("physics", "lab1")
    assert roles.labs_of("dave", ["dave", "other"]) == ()
    assert roles.is_admin("root", ["root"]) and roles.is_admin("ops", ["ops"])
    assert roles.is_admin("erin", ["erin", "fdadmin"]) and not roles.is_admin("alice", ["alice", "lab1"])
    with pytest.raises(ConfigError, match=r"\[access\].private_jobs: expected true or false"):
        Roles.from_section({"private_jobs": "no"})


def _caller(user: str, labs: tuple[str, ...] = (), admin: bool = False) -> Caller:
    return Caller(user=user, uid=None, gid=None, via=Via.TOKEN, labs=labs, admin=admin)


def test_access_rules_and_every_refusal_is_journalled() -> None:
    journal: list[Event] = []
    roles = Roles(labs={"lab1": frozenset({"alice", "bob"})}, labmates_read_jobs=True, lab_groups=frozenset())
    access = Access(roles, journal.append)
    bob, carol = _caller("bob", ("lab1",)), _caller("carol")
    assert access.may(bob, "alice", Action.READ) and not access.may(bob, "alice", Action.LOGS)
    assert not access.may(carol, "alice", Action.LIST) and access.may(_caller("x", admin=True), "alice", Action.ACT)
    with pytest.raises(Forbidden, match="carol may not cancel job 7") as exc:
        access.job(carol, 7, "alice", Action.ACT, "cancel")
    assert exc.value.exit_code == 77 and exc.value.http_status == 403
    (ev,) = journal
    assert (ev.kind, ev.principal, ev.job_id) == (EventKind.ACCESS_DENIED, "carol", 7)
    assert ev.data == {"action": "cancel", "target": "job 7", "owner": "alice", "via": "token", "uid": None}
    public = Access(Roles(private_jobs=False), journal.append)
    assert public.may(carol, "alice", Action.LIST) and not public.may(carol, "alice", Action.READ)


def test_events_reach_their_owner_admins_and_nobody_else() -> None:
    access = Access(Roles(), lambda e: None)
    alice_job = Event(EventKind.JOB_REPORT, job_id=1, principal="alice")
    refused = Event(EventKind.ACCESS_DENIED, job_id=1, principal="bob")
    drained = Event(EventKind.NODE_DRAINED)
    bob = _caller("bob")
    assert [access.sees_event(bob, e) for e in (alice_job, refused, drained)] == [False, True, True]
    assert access.sees_event(_caller("alice"), alice_job) and not access.sees_event(_caller("alice"), refused)
    # a refusal about another user's object names its owner and says it exists: admins only
    hidden = Event(EventKind.ACCESS_DENIED, principal="bob", data={"target": "session s1", "owner": "alice"})
    own = Event(EventKind.ACCESS_DENIED, principal="bob", data={"target": "the policy", "owner": None})
    assert not access.sees_event(bob, hidden) and access.sees_event(bob, own)
    assert not access.sees_event(_caller("alice"), hidden)


def test_unmunge_gives_the_encoders_uid_once_for_its_own_request() -> None:
    from frontdesk.wire import request_binding

    this = request_binding("GET", "/v1/jobs/1", b"")
    try:
        cred = subprocess.run(["munge"], input=this, capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("munged is not running here")
    assert unmunge_credential(cred.strip(), this).uid == os.getuid()
    from frontdesk.errors import CommandFailed

    with pytest.raises(CommandFailed):  # munged remembers it: a replay is refused
        unmunge_credential(cred.strip(), this)
    with pytest.raises(ConfigError):
        unmunge_credential("not a credential", this)
    other = subprocess.run(["munge"], input=this, capture_output=True, text=True, timeout=10, check=True).stdout
    with pytest.raises(ConfigError):  # made for another request
        unmunge_credential(other.strip(), request_binding("GET", "/v1/jobs/1/logs", b""))
    bare = subprocess.run(["munge", "-n"], capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    with pytest.raises(ConfigError):  # a credential that names no request is good for none
        unmunge_credential(bare, this)
    assert request_binding("POST", "/v1/jobs", b"{}") != request_binding("POST", "/v1/jobs", b"{ }")


def test_rendezvous_refuses_a_directory_others_may_write(tmp_path: Path) -> None:
    d = tmp_path / "run"
    d.mkdir(mode=0o700)
    check_rendezvous(d / "gateway.sock", (os.getuid(),))  # nothing there yet: fine, nothing is sent
    d.chmod(0o777)
    with pytest.raises(RendezvousRefused, match="others may write to it"):
        check_rendezvous(d / "gateway.sock", (os.getuid(),))
    d.chmod(0o700)
    (d / "gateway.sock").write_text("")
    with pytest.raises(RendezvousRefused, match="not a socket"):
        check_rendezvous(d / "gateway.sock", (os.getuid(),))


def test_peer_credentials_of_a_socketpair() -> None:
    a, b = socket.socketpair()
    with a, b:
        cred = peer_credentials(a)
        assert cred is not None and (cred.pid, cred.uid, cred.gid) == (os.getpid(), os.getuid(), os.getgid())


def test_the_site_config_makes_clients_and_the_gateway_facility(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from frontdesk.config import load_settings
    from frontdesk.paths import socket_path_from_env

    site = tmp_path / "site.toml"
    site.write_text('[gateway]\nmode = "facility"\nsocket = "/run/fd-test/gw.sock"\n[access]\nadmins_group = "ops"\n')
    for key in ("FRONTDESK_HOME", "FRONTDESK_SOCKET", "FRONTDESK_CONFIG", "FRONTDESK_MODE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("FRONTDESK_SITE_CONFIG", str(site))
    monkeypatch.setenv("HOME", str(tmp_path))
    settings = load_settings()
    assert (settings.mode, settings.socket, settings.home) == (
        "facility",
        Path("/run/fd-test/gw.sock"),
        Path("/var/lib/frontdesk"),
    )
    assert settings.section("access") == {"admins_group": "ops"}
    assert socket_path_from_env() == Path("/run/fd-test/gw.sock")
    own = tmp_path / "own.toml"
    own.write_text('[gateway]\ntoken = "t"\n')
    own.chmod(0o644)
    with pytest.raises(ConfigError, match="it holds tokens, so it must be 0600"):
        load_settings(own)
    own.chmod(0o600)
    assert load_settings(own).token == "t" and load_settings(own).mode == "facility"
