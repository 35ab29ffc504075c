"""Root and the site's admins name another user's session (`--user NAME`, sent as `?user=`) and list every
user's sessions, each row naming its user; a user who is not an admin naming another is refused in one line.

Real Unix users on a root facility gateway: alice and bob register the same session id (ids are each user's own
namespace, keyed by (user, id)), so without a user the id is ambiguous for an admin, and `--user` picks one.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from facility_helpers import Facility

ADMIN = "fdadmin-user"  # in the site's admins_group (facility_helpers.USERS)


def _register(fac: Facility, user: str, sid: str) -> None:
    call = {"method": "POST", "path": "/v1/sessions", "body": {"session": sid, "harness": "claude-code", "cwd": "/tmp"}}
    status, got = fac.probe(user, [call])[0]
    assert status == 200 and got["user"] == user, got


def test_an_admin_names_another_users_session_and_lists_all_a_user_is_refused(facility: Facility) -> None:
    sid = f"named-{secrets.token_hex(6)}"
    _register(facility, "alice", sid)
    _register(facility, "bob", sid)

    # the admin (not root) names alice's session, then bob's: each answer is that user's session
    for user in ("alice", "bob"):
        r = facility.cli(ADMIN, "sessions", "show", sid, "--user", user, "--json")
        assert r.returncode == 0, r.stderr
        shown: dict[str, Any] = json.loads(r.stdout)
        assert shown["user"] == user, shown
    # without --user, an id two users hold is never guessed: one line naming both
    r = facility.cli(ADMIN, "sessions", "show", sid, "--json")
    assert r.returncode != 0 and "several users (alice, bob)" in r.stderr, r.stderr

    # the admin lists everyone's sessions; the table names each row's user
    r = facility.cli(ADMIN, "sessions", "--all", "--json")
    assert r.returncode == 0, r.stderr
    assert sorted(s["user"] for s in json.loads(r.stdout) if s["id"] == sid) == ["alice", "bob"]
    r = facility.cli(ADMIN, "sessions", "list", "--all")
    assert r.returncode == 0, r.stderr
    head, *rows = r.stdout.splitlines()
    assert head.split()[:2] == ["SESSION", "USER"], r.stdout
    assert sorted(line.split()[1] for line in rows if line.startswith(sid[:13])) == ["alice", "bob"], r.stdout

    # the admin drains a node: every user's live session there is recorded suspended (no process of theirs runs)
    node = f"fdnode-{secrets.token_hex(4)}"
    reach = {"session": sid + "-n", "cwd": "/tmp", "reach": {"host": node}}
    for user in ("alice", "bob"):
        assert facility.probe(user, [{"method": "POST", "path": "/v1/sessions", "body": reach}])[0][0] == 200
    r = facility.cli(ADMIN, "sessions", "drain", "--node", node, "--json")
    assert r.returncode == 0, r.stderr
    assert len(json.loads(r.stdout)["sessions"]) == 2, r.stdout
    for user in ("alice", "bob"):
        r = facility.cli(ADMIN, "sessions", "show", sid + "-n", "--user", user, "--json")
        assert r.returncode == 0 and json.loads(r.stdout)["suspended_at"] is not None, (r.stdout, r.stderr)

    # bob, no admin, naming alice's session: the API's one-line refusal, nothing of hers shown
    for argv in (("show", sid, "--user", "alice"), ("suspend", sid, "--user", "alice")):
        r = facility.cli("bob", "sessions", *argv, "--json")
        assert r.returncode != 0, r.stdout
        assert "may not act on another user's session" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r
        assert "alice" not in r.stdout
    # bob's --all lists only his own
    r = facility.cli("bob", "sessions", "--all", "--json")
    assert r.returncode == 0, r.stderr
    assert {s["user"] for s in json.loads(r.stdout)} == {"bob"}
