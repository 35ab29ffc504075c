"""A site admin (a member of `[access] admins_group`, not root) may not make a bearer token for root: with one,
a job submitted over TCP ran as uid 0, so membership of a Unix group was root on the machine. The canary job
only writes `id -u` into a directory of the test's own."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from facility_helpers import SYSTEM_PY, Facility, run_as

from unix_users import scratch_dir

ADMIN = "fdadmin-user"


@pytest.fixture
def drop() -> Iterator[Path]:
    with scratch_dir("fdtokroot-", 0o1777) as d:
        yield d


def test_an_admin_makes_no_token_for_root(facility: Facility, drop: Path) -> None:
    before = facility.tokens_file.read_text()
    since = facility.root_client().health()["last_seq"]
    r = facility.cli(ADMIN, "token", "create", "--principal", "root", "--json")
    if r.returncode == 0:  # before: a token for root; a job sent with it ran as uid 0
        token = json.loads(r.stdout)["token"]
        env = {"FRONTDESK_URL": facility.url, "FRONTDESK_TOKEN": token}
        job = f"id -u > {drop}/uid"
        cli = [SYSTEM_PY, "-m", "frontdesk.cli.main", "run", "--wait", "--workdir", "/tmp", "--", "sh", "-c", job]
        ran = run_as(ADMIN, cli, env=facility.env(**env))
        pytest.fail(f"an admin made a token for root; a job with it wrote uid {(drop / 'uid').read_text()!r} "
                    f"({ran.returncode} {ran.stderr.strip()})")  # fmt: skip
    assert r.returncode == 77 and json.loads(r.stdout)["error"] == "forbidden", (r.returncode, r.stdout, r.stderr)
    assert r.stderr == f"frontdesk: {ADMIN} may not make a token for root\n"
    assert facility.tokens_file.read_text() == before
    denied = facility.root_client().request("GET", f"/v1/events?since={since}&kind=access.denied")
    assert [(e["principal"], e["data"]["owner"]) for e in denied] == [(ADMIN, "root")]
    made = facility.cli(ADMIN, "token", "create", "--principal", ADMIN, "--json")  # their own: as before
    assert made.returncode == 0, made.stderr
    mine = json.loads(made.stdout)
    assert facility.cli(ADMIN, "token", "revoke", "--principal", ADMIN, "--id", mine["id"]).returncode == 0


def test_root_still_makes_one(facility: Facility) -> None:
    made = facility.root_client().request("POST", "/v1/tokens", {"principal": "root"})
    assert made["principal"] == "root" and made["token"]
    facility.root_client().request("POST", "/v1/tokens/revoke", {"principal": "root", "id": made["id"]})
