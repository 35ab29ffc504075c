"""Root never looks at a job's working directory for its user: the shepherd of a root facility gateway
checked it (`os.path.isdir`, then Popen's chdir) as root, so a job's failure told its user what root sees:
`the working directory X does not exist` for a missing path, `cannot start as alice in X: Permission denied`
for one that exists behind a directory alice may not enter. Any user could map root-only trees (other users'
0700 homes, /root) path by path. Now the user's own chdir decides both, and both read as the user sees them."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from facility_helpers import Facility


@pytest.fixture
def hidden() -> Iterator[Path]:
    """A root-only directory (0700) holding one subdirectory: what exists there is root's business."""
    d = Path(tempfile.mkdtemp(prefix="fdoracle-", dir="/tmp"))  # 0700, root's
    (d / "exists").mkdir()
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _ended(fac: Facility, workdir: Path) -> dict[str, Any]:
    spec = {"command": ["touch", "ran"], "workdir": str(workdir)}
    body = {"spec": spec, "context": {"cwd": "/tmp", "env": {}}}
    status, rec = fac.probe("alice", [{"method": "POST", "path": "/v1/jobs", "body": body}])[0]
    assert status == 200, rec
    deadline = time.monotonic() + 60
    while True:
        status, got = fac.probe("alice", [{"method": "GET", "path": f"/v1/jobs/{rec['id']}"}])[0]
        if status == 200 and got.get("ended_at") and not got.get("report_pending"):
            break
        assert time.monotonic() < deadline, got
        time.sleep(0.3)
    status, report = fac.probe("alice", [{"method": "GET", "path": f"/v1/jobs/{rec['id']}/report"}])[0]
    assert status == 200, report
    status, logs = fac.probe("alice", [{"method": "GET", "path": f"/v1/jobs/{rec['id']}/logs?stream=stderr"}])[0]
    assert status == 200, logs
    return {"job": got, "report": report, "stderr": logs["lines"]}


def test_a_missing_and_a_hidden_workdir_read_the_same_to_the_user(facility: Facility, hidden: Path) -> None:
    there = _ended(facility, hidden / "exists")
    missing = _ended(facility, hidden / "missing")
    for got in (there, missing):
        assert got["job"]["state"] == "FAILED", got["job"]
        assert not (hidden / "exists" / "ran").exists()
    said = [json.dumps(got).replace(str(hidden / "exists"), "DIR").replace(str(hidden / "missing"), "DIR")
            for got in (there, missing)]  # fmt: skip
    assert "does not exist" not in said[0] + said[1]  # root's view of the path, before
    assert "cannot start as alice in DIR: Permission denied" in said[0], said[0]
    assert "cannot start as alice in DIR: Permission denied" in said[1], said[1]  # the user's view: no way in
