"""A root gateway's guard reads the scripts a submission names (`bash run.sh`) for the submitter: only what that
user could read themselves, and without opening anything else. Before, it checked the file's own mode bits after
root had opened it: a world-readable script inside alice's 0700 directory was read for bob and what it held came
back as his guard verdict, and naming a FIFO made root open it (a blocked writer was let go; opening a device is an
action of its own). Probe: bob names alice's script and a root FIFO with a writer waiting on it."""

from __future__ import annotations

import os
import pwd
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from facility_helpers import Facility, run_as

from fifo_helpers import BlockedWriter

MARK = "fdguardleakmark"


@pytest.fixture
def alices_dir(facility: Facility) -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="fdguardprobe-", dir=Path("~alice").expanduser()))
    script = d / "run.sh"
    script.write_text(f"#!/bin/sh\nrm -rf ~/{MARK}\n")  # a canary: never run, only read by the guard
    script.chmod(0o644)  # readable by all: only the directory keeps it alice's
    shutil.chown(script, "alice", "alice")
    shutil.chown(d, "alice", "alice")
    d.chmod(0o700)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _submit(fac: Facility, user: str, command: list[str]) -> list[Any]:
    body = {"spec": {"command": command}, "context": {"cwd": "/tmp"}}
    [answer] = fac.probe(user, [{"method": "POST", "path": "/v1/jobs", "body": body}])
    return list(answer)


def test_a_script_in_another_users_private_directory_is_not_read_for_me(facility: Facility, alices_dir: Path) -> None:
    script = str(alices_dir / "run.sh")
    assert run_as("bob", ["cat", script]).returncode != 0  # bob cannot read it himself
    hers = _submit(facility, "alice", ["sh", script])
    assert hers[0] == 200 and "fs.rm-wide" in str(hers[1]["notices"]), hers  # the guard read it for alice
    bobs = _submit(facility, "bob", ["sh", script])
    assert "fs.rm-wide" not in str(bobs) and MARK not in str(bobs), bobs  # what is in it is not bob's to learn


def test_naming_a_fifo_opens_nothing(facility: Facility) -> None:
    d = Path(tempfile.mkdtemp(prefix="fdguardfifo-", dir="/tmp"))
    d.chmod(0o755)
    fifo = d / "run.sh"
    os.mkfifo(fifo, 0o600)  # root's: bob may not open it, and root must not open it for him
    w = BlockedWriter(fifo)
    try:
        answer = _submit(facility, "bob", ["sh", str(fifo)])
        assert answer[0] in (200, "denied"), answer
        assert not w.released.is_set(), "the gateway opened the FIFO bob named"
    finally:
        try:
            w.stop()
        finally:
            shutil.rmtree(d, ignore_errors=True)


def test_a_scripts_tilde_is_the_submitters_home_not_the_gateways(facility: Facility) -> None:
    """`bash ~/run.sh` in a job's script runs the submitter's file (bash expands `~` as them); the guard read
    `~` as the root gateway's own home, so bob's script went unread (and root's /root/run.sh was the one judged)."""
    home = Path(pwd.getpwnam("bob").pw_dir)
    script = home / "fdguardtilde-run.sh"
    script.write_text(f"#!/bin/sh\nrm -rf ~/{MARK}\n")  # a canary: never run, only read by the guard
    shutil.chown(script, "bob", "bob")
    try:
        body = {"spec": {"script": "#!/bin/sh\nbash ~/fdguardtilde-run.sh\n"}, "context": {"cwd": "/tmp"}}
        [[status, job]] = facility.probe("bob", [{"method": "POST", "path": "/v1/jobs", "body": body}])
        assert "fs.rm-wide" in str(job), (status, job)  # bob's own script, read as bob
        if status == 200:
            facility.probe("bob", [{"method": "POST", "path": f"/v1/jobs/{job['id']}/cancel"}])
    finally:
        script.unlink()
