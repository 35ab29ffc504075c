"""A job of a root facility gateway creates its files with its submitter's umask, not the gateway's.

Slurm passes the submitter's umask to the job (SLURM_UMASK); before this, every job of a root gateway ran
with root's umask (0022): alice, whose shell says `umask 077`, had her job's results made 0644 in her own
directory, and bob read them. The client sends its umask with the environment (FRONTDESK_UMASK) and the
shepherd sets it before the job starts."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from facility_helpers import SYSTEM_PY, Facility, run_as


@pytest.fixture
def work(facility: Facility) -> Iterator[Path]:
    """A directory of alice's that others may enter (0755), as a home or a project directory often is."""
    d = Path(tempfile.mkdtemp(prefix="fdumask-", dir="/tmp"))
    d.chmod(0o755)
    os.chown(d, _uid("alice"), -1)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _uid(user: str) -> int:
    import pwd

    return pwd.getpwnam(user).pw_uid


def _run_with_umask(fac: Facility, mask: str, work: Path, name: str) -> None:
    """`umask MASK; frontdesk run --wait -- ...` in alice's shell: the job makes a file and a directory."""
    job = f"umask > {name}.umask; env | grep -i umask > {name}.env; echo secret > {name}.txt; mkdir {name}.d"
    cli = f"umask {mask}; cd {work}; exec {SYSTEM_PY} -m frontdesk.cli.main run --wait -- sh -c '{job}'"
    r = run_as("alice", ["sh", "-c", cli], env=fac.env())
    assert r.returncode == 0, (r.stdout, r.stderr)


def test_the_job_keeps_its_submitters_umask(facility: Facility, work: Path) -> None:
    _run_with_umask(facility, "077", work, "private")
    assert (work / "private.umask").read_text().strip() == "0077", (work / "private.env").read_text()
    assert stat.S_IMODE((work / "private.txt").stat().st_mode) == 0o600
    assert stat.S_IMODE((work / "private.d").stat().st_mode) == 0o700
    assert (work / "private.txt").stat().st_uid == _uid("alice")
    peek = run_as("bob", ["cat", str(work / "private.txt")])
    assert peek.returncode != 0 and "secret" not in peek.stdout  # bob may not read what alice kept private

    _run_with_umask(facility, "002", work, "shared")  # a lab's group-writable habit holds as well
    assert (work / "shared.umask").read_text().strip() == "0002"
    assert stat.S_IMODE((work / "shared.txt").stat().st_mode) == 0o664
