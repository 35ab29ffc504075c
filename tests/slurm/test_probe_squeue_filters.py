"""squeue command lines agents get wrong, through the real squeue and the shim on the lab: the shim must
print what squeue prints, errors included (exit status, stdout and stderr). Before the fix the shim answered
`-t bogus`, `-S bogus`, `-j abc`, `-j 0` and `-u nosuchuser` itself (exit 0, or another message, where squeue
fails or warns), printed nothing for `%.0i` (squeue reads width 0 as none), `%g` and unknown codes, and `%%`
as `%`."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from shim_lab import shim_gateway

pytestmark = pytest.mark.slurm

ROWS = [
    ("unknown state", ["-h", "-t", "bogus"]),
    ("unknown sort key", ["-h", "-j", "{job}", "-S", "bogus"]),
    ("id zero", ["-j", "0"]),
    ("id not a number", ["-j", "abc"]),
    ("id too long", ["-j", "99999999999999999999"]),
    ("task range", ["-h", "-j", "{job}_[1-3]"]),
    ("unknown user", ["-h", "-u", "nosuchuser-tp2", "-j", "{job}"]),
    ("width zero", ["-h", "-j", "{job}", "-o", "%.0i|%0j|"]),
    ("group features nodes comment", ["-h", "-j", "{job}", "-o", "%g|%f|%n|%x|%k|"]),
    ("codes the view lacks", ["-h", "-j", "{job}", "-o", "%i %z %y %B"]),
    ("percent percent", ["-h", "-j", "{job}", "-o", "a%%b"]),
    ("left-justify dash", ["-h", "-j", "{job}", "-o", "%-5i|"]),
    ("time left", ["-h", "-j", "{job}", "-o", "%.5L|%L"]),
]


@pytest.fixture(scope="module")
def lab(slurm_lab: Path, tmp_path_factory: Any) -> Iterator[tuple[dict[str, str], str]]:
    work = tmp_path_factory.mktemp("filters")
    with shim_gateway(slurm_lab, work / "shims") as (_, env):
        out = subprocess.run(
            ["sbatch", "--parsable", "--hold", "-J", f"tp2-filters-{time.time_ns()}", "--comment", "a note", "-x",
             "cpu2", "--wrap", "true"],
            env=env, capture_output=True, text=True, cwd=work,
        )  # fmt: skip
        assert out.returncode == 0, out
        job = out.stdout.strip()
        time.sleep(1.5)  # past refresh_seconds
        yield env, job
        subprocess.run(["scancel", job], capture_output=True)


@pytest.mark.parametrize(("name", "args"), ROWS, ids=[r[0] for r in ROWS])
def test_the_shim_answers_as_squeue_does(lab: tuple[dict[str, str], str], name: str, args: list[str]) -> None:
    env, job = lab
    argv = ["squeue", *(a.format(job=job) for a in args)]
    real = subprocess.run(argv, capture_output=True, text=True)
    shim = subprocess.run(argv, env=env, capture_output=True, text=True)
    assert (shim.returncode, shim.stdout, shim.stderr) == (real.returncode, real.stdout, real.stderr), name
