"""`frontdesk fs` operators on a root facility gateway run with the caller's rights: a root-only canary file is
never read for a user, not even after root read it (the content cache is per user), and a user's answer is
the same as what their own `grep` gives (permission denied)."""

from __future__ import annotations

import secrets
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from facility_helpers import Facility

from unix_users import ensure_user

FACILITY_GATEWAY = 'plugins = ["storage"]\n'
USER = "fdprobe-fs"


@pytest.fixture
def canary() -> Iterator[tuple[Path, str]]:
    d = Path(tempfile.mkdtemp(prefix="fdprobe-fsroot-", dir="/tmp"))
    d.chmod(0o755)  # the directory is listable; the file is root's alone
    marker = "fdprobe-canary-" + secrets.token_hex(8)
    f = d / "secret.txt"
    f.write_text(f"{marker}\n")
    f.chmod(0o600)
    yield f, marker
    shutil.rmtree(d, ignore_errors=True)


def _fs(fac: Facility, user: str, op: str, argv: list[str], cwd: str) -> list[Any]:
    call = {"method": "POST", "path": f"/v1/fs/{op}", "body": {"argv": argv, "cwd": cwd}}
    if user == "root":
        try:
            return [200, fac.root_client().request("POST", call["path"], call["body"])]
        except Exception as exc:  # noqa: BLE001 - the probe reports what came back
            return ["error", str(exc)]
    out: list[Any] = fac.probe(user, [call])[0]
    return out


def test_a_root_only_file_is_never_read_for_a_user(facility: Facility, canary: tuple[Path, str]) -> None:
    ensure_user(USER)
    path, marker = canary
    d = str(path.parent)
    root_view = _fs(facility, "root", "grep", ["-r", "fdprobe-canary", d], d)
    assert marker in str(root_view), root_view  # root may; and now its bytes may sit in root's cache
    for op, argv in (("grep", ["-r", "fdprobe-canary", d]), ("head", [str(path)]), ("tail", [str(path)])):
        got = _fs(facility, USER, op, argv, d)
        assert marker not in str(got), (op, got)
    assert facility.root_client().health()["ok"]
