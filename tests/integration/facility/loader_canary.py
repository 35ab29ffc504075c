"""The loader canary of the test_probe_loader_env_* modules: a shared object and a sitecustomize.py that only
create an empty file named `<kind>-<pid>-uid<euid>` in the canary's own directory (harmless if they run)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from facility_helpers import Facility

from unix_users import ensure_user

USER = "fdpr27b"

_SOURCE = r"""
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
__attribute__((constructor)) static void canary(void) {
    const char *dir = getenv("FDPR_CANARY_DIR");
    char path[600];
    if (!dir) return;
    snprintf(path, sizeof path, "%s/out/preload-%d-uid%d", dir, (int)getpid(), (int)geteuid());
    FILE *f = fopen(path, "w");
    if (f) fclose(f);
}
"""
_SITE = (
    "import os\n"
    "d = os.environ.get('FDPR_CANARY_DIR')\n"
    "if d:\n"
    "    open(f'{d}/out/site-{os.getpid()}-uid{os.geteuid()}', 'w').close()\n"
)


@dataclass(frozen=True)
class Canary:
    dir: Path
    uid: int

    @property
    def env(self) -> dict[str, str]:
        return {
            "FDPR_CANARY_DIR": str(self.dir),
            "LD_PRELOAD": str(self.dir / "canary.so"),
            "PYTHONPATH": str(self.dir / "py"),
        }

    def ran(self) -> list[str]:
        return sorted(p.name for p in (self.dir / "out").iterdir())


@pytest.fixture(name="canary")
def canary_fixture(facility: Facility) -> Iterator[Canary]:
    if not shutil.which("gcc"):
        pytest.skip("the loader canary is compiled with gcc")
    uid = ensure_user(USER).pw_uid
    d = Path(tempfile.mkdtemp(prefix="fdpr27-canary-", dir="/tmp"))
    d.chmod(0o755)
    (d / "canary.c").write_text(_SOURCE)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(d / "canary.so"), str(d / "canary.c")], check=True)
    (d / "py").mkdir(mode=0o755)
    (d / "py" / "sitecustomize.py").write_text(_SITE)
    (d / "out").mkdir()
    (d / "out").chmod(0o1777)
    (d / "work").mkdir()
    os.chown(d / "work", uid, -1)  # the job's own working directory (its Slurm output lands there)
    yield Canary(d, uid)
    shutil.rmtree(d, ignore_errors=True)


def submit_and_end(fac: Facility, can: Canary) -> list[str]:
    """Submit as the user (their environment carries the canary), wait for the end; the job's stdout lines."""
    work = str(can.dir / "work")
    spec = {"command": ["sh", "-c", 'echo "LD=$LD_PRELOAD"'], "workdir": work}
    body = {"spec": spec, "context": {"cwd": work, "env": {"PATH": "/usr/bin:/bin", **can.env}}}
    status, rec = fac.probe(USER, [{"method": "POST", "path": "/v1/jobs", "body": body}])[0]
    assert status == 200, rec
    got = fac.ended(rec["id"])
    status, logs = fac.probe(USER, [{"method": "GET", "path": f"/v1/jobs/{rec['id']}/logs?tail=50"}])[0]
    assert status == 200, logs
    assert got["state"] == "COMPLETED", (can.ran(), json.dumps(got)[:300])
    lines: list[str] = logs["lines"]
    return lines


def assert_only_the_user_ran_it(can: Canary, lines: list[str]) -> None:
    """The job saw its LD_PRELOAD (and ran it as the user); no process ran the canary as anyone else."""
    assert f"LD={can.dir / 'canary.so'}" in lines, lines
    ran = can.ran()
    assert any(name.endswith(f"-uid{can.uid}") for name in ran), ran
    others = [name for name in ran if not name.endswith(f"-uid{can.uid}")]
    assert others == [], f"the canary ran as another uid (root?): {others}"
