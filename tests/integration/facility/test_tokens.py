"""`frontdesk token create|list|revoke` on a root facility gateway: admins only, stored hashed, shown once, never on
a command line, revoked at once. Real users: fdadmin-user (admin group), carol, fdh6a (the token's user)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
from facility_helpers import SYSTEM_PY, Facility, run_as

from unix_users import ensure_user

ADMIN = "fdadmin-user"
USER = "fdh6a"


@pytest.fixture(scope="module")
def token_user(facility_users: dict[str, int]) -> str:
    ensure_user(USER)
    return USER


def _tcp(fac: Facility, user: str, token: str, path: str = "/v1/jobs") -> list[Any]:
    env = {"FRONTDESK_URL": fac.url, "FRONTDESK_TOKEN": token}
    out: list[Any] = fac.probe(user, [{"method": "GET", "path": path}], env=env)[0]
    return out


def _grep(root: Path, needle: bytes) -> list[str]:
    """Files under root holding the bytes (the journal database included)."""
    hits = []
    for path in root.rglob("*"):
        if path.is_file() and needle in path.read_bytes():
            hits.append(str(path))
    return hits


def test_an_admin_makes_a_token_shown_once_and_stored_hashed(facility: Facility, token_user: str) -> None:
    r = facility.cli(ADMIN, "token", "create", "--principal", token_user, "--json")
    assert r.returncode == 0, r.stderr
    made = json.loads(r.stdout)
    token = made["token"]
    assert made["principal"] == token_user and len(token) >= 40 and token not in r.stderr
    assert _tcp(facility, token_user, token)[0] == 200  # acts as fdh6a over TCP
    whoami = _tcp(facility, token_user, token, "/v1/jobs?principal=alice")
    assert whoami == [200, []]  # it is fdh6a, who sees none of alice's jobs
    st = facility.tokens_file.stat()
    assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == 0
    text = facility.tokens_file.read_text()
    assert token not in text and f"{token_user} sha256:" in text and f"by={ADMIN}" in text
    assert _grep(facility.dir, token.encode()) == []  # not in the log, the journal, the database
    listed = facility.cli(ADMIN, "token", "list", "--principal", token_user, "--json")
    assert listed.returncode == 0 and token not in listed.stdout
    assert [t["id"] for t in json.loads(listed.stdout)["tokens"]] == [made["id"]]


def test_a_token_is_read_from_stdin_or_a_file_never_argv(facility: Facility, token_user: str) -> None:
    mine = "fdh6-" + os.urandom(24).hex()
    r = run_as(
        ADMIN,
        [SYSTEM_PY, "-m", "frontdesk.cli.main", "token", "create", "--principal", token_user, "--stdin", "--json"],
        env=facility.env(),
        input=mine + "\n",
    )
    assert r.returncode == 0, r.stderr
    assert "token" not in json.loads(r.stdout)  # a given token is not echoed back
    assert _tcp(facility, token_user, mine)[0] == 200
    r = facility.cli(ADMIN, "token", "create", "--principal", token_user, "--from-file", "/nonexistent/fdh6-token")
    assert (r.returncode, r.stderr) == (
        2,
        "frontdesk: cannot read /nonexistent/fdh6-token: No such file or directory\n",
    )
    r = facility.cli(ADMIN, "token", "create", "--principal", "fdh6-no-such-user")
    assert r.returncode == 2 and "no Unix user 'fdh6-no-such-user'" in r.stderr
    r = facility.cli(ADMIN, "token", "create", "--principal", token_user, "--token", mine)
    assert (r.returncode, r.stderr) == (
        2,
        "frontdesk: a token on the command line is public (ps shows it): give it with --stdin or --from-file\n",
    )


def test_revoking_holds_from_the_next_request(facility: Facility, token_user: str) -> None:
    made = json.loads(facility.cli(ADMIN, "token", "create", "--principal", token_user, "--json").stdout)
    other = json.loads(facility.cli(ADMIN, "token", "create", "--principal", token_user, "--json").stdout)
    assert _tcp(facility, token_user, made["token"])[0] == 200
    r = facility.cli(ADMIN, "token", "revoke", "--principal", token_user, "--id", made["id"], "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["revoked"] == [made["id"]]
    assert _tcp(facility, token_user, made["token"]) == [
        "unauthenticated",
        "a valid bearer token or MUNGE credential is required",
    ]
    assert _tcp(facility, token_user, other["token"])[0] == 200  # only that one
    r = facility.cli(ADMIN, "token", "revoke", "--principal", token_user)
    assert r.returncode == 0 and _tcp(facility, token_user, other["token"])[0] == "unauthenticated"
    r = facility.cli(ADMIN, "token", "revoke", "--principal", token_user)
    assert r.returncode == 3 and r.stderr.startswith(f"frontdesk: no token of {token_user} in ")


def test_only_admins_manage_tokens_and_each_refusal_is_journalled(facility: Facility, token_user: str) -> None:
    since = facility.root_client().health()["last_seq"]
    before = facility.tokens_file.read_text()
    cases = [
        (("create", "--principal", "carol"), "make a token for carol"),
        (("list",), "list the tokens of every user"),
        (("revoke", "--principal", "alice"), "revoke the tokens of alice"),
    ]
    for args, what in cases:
        r = facility.cli("carol", "token", *args)
        assert (r.returncode, r.stdout, r.stderr) == (77, "", f"frontdesk: carol may not {what}\n"), args
    events = facility.root_client().request("GET", f"/v1/events?since={since}&kind=access.denied")
    assert [(e["principal"], e["data"]["action"]) for e in events] == [
        ("carol", "make a token for"),
        ("carol", "list the tokens of"),
        ("carol", "revoke the tokens of"),
    ]
    assert facility.tokens_file.read_text() == before  # nothing added, nothing revoked


def test_serve_starts_with_no_token_on_its_command_line(facility: Facility) -> None:
    assert facility.proc is not None
    argv = Path(f"/proc/{facility.proc.pid}/cmdline").read_bytes().split(b"\0")
    assert not any(b"token" in a.lower() for a in argv), argv
    assert facility.tokens["carol"].encode() not in b"".join(argv)
    r = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True)
    assert not any(t in r.stdout for t in facility.tokens.values())


def test_a_per_user_gateway_keeps_its_tokens_in_its_state_dir(gateway_factory: Any) -> None:
    gw = gateway_factory()
    assert not (gw.home / "tokens").exists()  # none until the first is made: the gateway starts without it
    r = gw.cli("token", "create", "--principal", "root", "--json")
    assert r.returncode == 0, r.stderr
    made = json.loads(r.stdout)
    file = gw.home / "tokens"
    assert made["file"] == str(file) and stat.S_IMODE(file.stat().st_mode) == 0o600
    assert made["token"] not in file.read_text()
    r = gw.cli("token", "list")
    assert r.returncode == 0 and r.stdout.startswith(f"{made['id']}  root  created ")
