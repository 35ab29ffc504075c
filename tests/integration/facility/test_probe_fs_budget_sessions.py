"""The metadata budget of `frontdesk fs` holds per user, not per made-up session name.

The budget is a token bucket per (user, agent session), and the session is a string the client sends. Before,
a user whose bucket was empty named a new session and got a full bucket again: no limit at all on the metadata
operations one user's agents put on the shared filesystem, and each new name one more entry kept for good in
the root gateway's memory. Now every user also has one bucket over all their sessions (`[storage] user_rate`,
`user_burst`), and a gateway keeps at most MAX_TALLIES per-session entries (full, idle ones are dropped first).
Real users and a root facility gateway with the storage plug-in; the walked tree is a temp directory.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from facility_helpers import Facility

FACILITY_GATEWAY = 'plugins = ["storage"]\n'
FACILITY_ACCESS = "\n[storage]\nrate = 0.001\nburst = 60\nuser_rate = 0.001\nuser_burst = 150\n"


@pytest.fixture(scope="module")
def tree() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="fdprobe-fs-", dir="/tmp"))
    for i in range(40):
        (d / f"f{i}").write_text("x\n")
    os.chmod(d, 0o755)
    for f in d.iterdir():
        f.chmod(0o644)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _du(fac: Facility, user: str, tree: Path, session: str) -> list[object]:
    body = {"argv": ["."], "cwd": str(tree), "session": session}
    got: list[object] = fac.probe(user, [{"method": "POST", "path": "/v1/fs/du", "body": body}])[0]
    return got


def test_new_session_names_do_not_refill_a_users_budget(facility: Facility, tree: Path) -> None:
    answers = [_du(facility, "alice", tree, f"made-up-{i}")[0] for i in range(8)]
    # each du costs ~45 tokens (a stat per entry): a session's 60 allow two; the user's 150 four in all
    assert answers[0] == 200, answers
    assert answers.count(200) <= 4 and answers[-1] == "rate_limited", answers
    # another user is not touched
    assert _du(facility, "bob", tree, "made-up-0")[0] == 200
