"""The same agent-style commands through the real Slurm commands and through the shims, on the lab.

Each row runs once through the real command and once through the shim (same arguments, same moment, same
jobs) and asserts identical output. Rows that differ on purpose carry their documented difference (docs/slurm.md,
"Differences from Slurm"). The jobs are held (`--hold`) so nothing moves between the two calls; every row
filters on this test's own jobs, since other users' jobs come and go on the shared lab.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from shim_lab import shim_gateway

from frontdesk.backends.slurm.squeue_text import Passthrough, answer

pytestmark = pytest.mark.slurm

SQUEUE_ROWS = [
    ("default", ["-n", "{names}"]),
    ("no header", ["-h", "-n", "{names}"]),
    ("by id", ["-j", "{first}"]),
    ("ids and states", ["-j", "{ids}", "-t", "PD"]),
    ("user and name", ["-u", "root", "-n", "{names}"]),
    ("uid as user", ["-u", "0", "-n", "{names}"]),
    ("custom format", ["-h", "-n", "{names}", "-o", "%.18i %.9P %.30j %.8u %.2t %.10M %.6D %R"]),
    ("format with state and reason", ["-n", "{names}", "-o", "%i|%j|%T|%r|%P|%C|%D|%l"]),
    ("partition filter", ["-p", "hpc", "-n", "{names}", "-h", "-o", "%i %j"]),
    ("sorted output", ["-n", "{names}", "-h", "-o", "%i %j", "-S", "-i"]),
    ("array job", ["-h", "-n", "{array}", "-o", "%i %K %F %j"]),
    ("gres", ["-h", "-j", "{gpu}", "-o", "%i %b"]),
    ("priority", ["-h", "-j", "{first}", "-o", "%i %p"]),
    ("unknown id", ["-j", "99999999"]),
]
SQUEUE_KNOWN_DIFFERENCES: dict[str, str] = {
    # row name -> why the shim's answer differs (documented in docs/slurm.md); none today
}
ENV_ROWS = [
    ("SQUEUE_FORMAT", {"SQUEUE_FORMAT": "%i %j %T"}, ["-h", "-n", "{names}"]),
    ("SQUEUE_SORT", {"SQUEUE_SORT": "-i"}, ["-h", "-n", "{names}", "-o", "%i"]),
    ("SQUEUE_STATES", {"SQUEUE_STATES": "PD"}, ["-h", "-n", "{names}", "-o", "%i %t"]),
    ("SQUEUE_FORMAT2", {"SQUEUE_FORMAT2": "JobID:10,Name:30,State:12"}, ["-h", "-n", "{names}"]),
]


@pytest.fixture(scope="module")
def lab_jobs(slurm_lab: Path, tmp_path_factory: Any) -> Any:
    """A real gateway on the lab, shims installed, and a few held jobs submitted through the shim."""
    config = (
        '[gateway]\nbackend = "slurm"\ntick_seconds = 1.0\nplugins = ["guard", "slurm"]\n\n'
        "[slurm]\nrefresh_seconds = 1.0\n"
    )
    work = tmp_path_factory.mktemp("diff")
    with shim_gateway(slurm_lab, work / "shims", config) as (_, env):
        tag = str(time.time_ns())[-8:]

        def sbatch(*argv: str) -> str:
            out = subprocess.run(
                ["sbatch", "--parsable", "--hold", *argv], env=env, capture_output=True, text=True, cwd=work
            )
            assert out.returncode == 0, out
            return out.stdout.strip()

        first = sbatch("-J", f"diff-a-{tag}", "-t", "10", "--wrap", "true")
        second = sbatch("-J", f"diff b {tag}", "-c", "2", "-N", "1", "--wrap", "true")
        third = sbatch("-J", f"diff-c-{tag}", "-p", "hpc", "--wrap", "true")
        array = sbatch("-J", f"diff-arr-{tag}", "--array=0-3", "--wrap", "true")
        gpu = sbatch("-J", f"diff-gpu-{tag}", "--gres=gpu:a100:1", "--wrap", "true")
        names = ",".join([f"diff-a-{tag}", f"diff b {tag}", f"diff-c-{tag}"])
        ids = f"{first},{second},{third}"
        fill = {"names": names, "first": first, "ids": ids, "array": f"diff-arr-{tag}", "gpu": gpu}
        time.sleep(1.5)  # past the shim's refresh interval: both see the same jobs
        yield env, fill, work
        subprocess.run(["scancel", first, second, third, array, gpu], capture_output=True)


def _both(env: dict[str, str], argv: list[str], extra: dict[str, str] | None = None) -> tuple[Any, Any]:
    real_env = {**os.environ, **(extra or {})}
    real = subprocess.run(argv, env=real_env, capture_output=True, text=True)
    shim = subprocess.run(argv, env={**env, **(extra or {})}, capture_output=True, text=True)
    return real, shim


@pytest.mark.parametrize(("name", "args"), SQUEUE_ROWS, ids=[r[0] for r in SQUEUE_ROWS])
def test_squeue_matches_the_real_one(lab_jobs: Any, name: str, args: list[str]) -> None:
    env, fill, _ = lab_jobs
    argv = ["squeue", *(a.format(**fill) for a in args)]
    real, shim = _both(env, argv)
    if name in SQUEUE_KNOWN_DIFFERENCES:
        pytest.xfail(SQUEUE_KNOWN_DIFFERENCES[name])
    assert (shim.returncode, shim.stdout) == (real.returncode, real.stdout), f"{argv}\nreal:\n{real}\nshim:\n{shim}"


@pytest.mark.parametrize(("name", "args"), SQUEUE_ROWS, ids=[r[0] for r in SQUEUE_ROWS])
def test_squeue_served_from_the_gateways_file_matches_the_real_one(lab_jobs: Any, name: str, args: list[str]) -> None:
    """The `sh` shim's fast path: after one call through the socket, the same command line is answered by
    `cat` of the file the gateway keeps rendered (`sh -x` shows it never reached the socket client)."""
    env, fill, work = lab_jobs
    argv = ["squeue", *(a.format(**fill) for a in args)]
    subprocess.run(argv, env=env, capture_output=True, check=False)
    deadline = time.monotonic() + 60  # the gateway renders the file on its next snapshot: later under load
    while True:
        traced = subprocess.run(
            ["sh", "-x", str(work / "shims" / "squeue"), *argv[1:]], env=env, capture_output=True, text=True
        )
        from_file = "squeue-socket" not in traced.stderr
        if from_file or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    real = subprocess.run(argv, env=os.environ, capture_output=True, text=True)
    try:
        answer(argv[1:], {}, "", None)
        passed_through = False
    except Passthrough:
        passed_through = True
    if real.returncode != 0 or passed_through:  # not a plain answer from the view: never kept in a file
        assert not from_file, traced.stderr
        return
    assert from_file, f"{argv}: never served from the file\n{traced.stderr}"
    assert (traced.returncode, traced.stdout) == (0, real.stdout), f"{argv}\nreal:\n{real}\nshim:\n{traced}"


@pytest.mark.parametrize(("name", "extra", "args"), ENV_ROWS, ids=[r[0] for r in ENV_ROWS])
def test_squeue_environment_matches_the_real_one(
    lab_jobs: Any, name: str, extra: dict[str, str], args: list[str]
) -> None:
    env, fill, _ = lab_jobs
    argv = ["squeue", *(a.format(**fill) for a in args)]
    real, shim = _both(env, argv, extra)
    assert (shim.returncode, shim.stdout) == (real.returncode, real.stdout), f"{argv}\nreal:\n{real}\nshim:\n{shim}"


def test_scancel_by_id_and_name_match(lab_jobs: Any) -> None:
    env, fill, work = lab_jobs
    for how in ("id", "name"):
        out = subprocess.run(
            ["sbatch", "--parsable", "--hold", "-J", f"doomed-{how}-{time.time_ns()}", "--wrap", "true"],
            env=env,
            capture_output=True,
            text=True,
            cwd=work,
        )
        job_id = out.stdout.strip()
        name = f"doomed-{how}"
        argv = ["scancel", job_id] if how == "id" else ["scancel", "--name", out.args[4]]
        done = subprocess.run(argv, env=env, capture_output=True, text=True)
        assert done.returncode == 0, (name, done)
        state = subprocess.run(["scontrol", "-o", "show", "job", job_id], capture_output=True, text=True).stdout
        assert "JobState=CANCELLED" in state, (name, state)
