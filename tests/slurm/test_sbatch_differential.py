"""The same sbatch command lines through the real sbatch and through the shim, side by side on the lab.

For each row both jobs run to the end; then what the user sees must match: sbatch's exit status and
message, the job's state and exit code, its name, nodes and tasks as Slurm records them, and the content
of its output files (job ids replaced by `<id>`). Differences on purpose are in docs/slurm.md.
"""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from shim_lab import shim_gateway

from frontdesk.backends.slurm.parse import parse_scontrol_jobs

pytestmark = pytest.mark.slurm

PY = "#!/usr/bin/env python3\nimport os, sys\nprint('py', sys.argv[1:], os.environ.get('MY_VAR'))\n"
SH = '#!/bin/bash\n#SBATCH -J scripted\n#SBATCH -o out-%x-%j.txt\necho "args=$* name=$SLURM_JOB_NAME"\nexit 3\n'
ROWS: list[tuple[str, list[str], str | None]] = [
    ("wrap", ["--wrap", "echo hi; echo err >&2"], None),
    ("script with directives and arguments", ["job.sh", "a", "b c"], SH),
    ("python shebang", ["-o", "py.txt", "job.py", "x"], PY),
    ("export none", ["--export=NONE", "-o", "none.txt", "job.py"], PY),
    ("export vars", ["--export=ALL,MY_VAR=given", "-o", "vars.txt", "job.py"], PY),
    ("two nodes", ["-N", "2", "--ntasks-per-node=1", "-p", "hpc", "--wrap", "srun -l true; echo done"], None),
    ("tasks and memory per cpu", ["-n", "2", "-c", "2", "--mem-per-cpu=100", "--wrap", "echo $SLURM_NTASKS"], None),
    ("missing output directory", ["-o", "nowhere/%j.out", "--wrap", "echo lost"], None),
    ("separate error file", ["-o", "o-%j.txt", "-e", "e-%j.txt", "--wrap", "echo out; echo err >&2"], None),
    ("array", ["--array=0-1", "-o", "arr-%A_%a.txt", "--wrap", "echo task $SLURM_ARRAY_TASK_ID"], None),
    ("no shebang", ["plain.sh"], "echo no shebang\n"),
    ("unknown option", ["--bogus-option", "--wrap", "true"], None),
    ("missing script", ["does-not-exist.sh"], None),
    ("dos line breaks", ["plain.sh"], "#!/bin/bash\r\necho dos\r\n"),
    ("empty script", ["plain.sh"], ""),
    ("array with a step", ["--array=0-4:2", "-o", "st-%a.txt", "--wrap", "echo $SLURM_ARRAY_TASK_STEP"], None),
]
FIELDS = ("JobState", "ExitCode", "JobName", "NumNodes", "NumTasks", "NumCPUs", "Partition", "MinMemoryCPU")


@pytest.fixture(scope="module")
def envs(slurm_lab: Path, tmp_path_factory: Any) -> Any:
    config = '[gateway]\nbackend = "slurm"\ntick_seconds = 1.0\nplugins = ["guard", "slurm"]\n'
    base = tmp_path_factory.mktemp("sbatch-diff")
    with shim_gateway(slurm_lab, base / "shims", config) as (gw, env):
        yield {**gw.env, "MY_VAR": "from-submitter"}, {**env, "MY_VAR": "from-submitter"}, base


def _submit(argv: list[str], env: dict[str, str], cwd: Path, script: str | None) -> subprocess.CompletedProcess[str]:
    cwd.mkdir(parents=True, exist_ok=True)
    for name in ("job.sh", "job.py", "plain.sh"):
        if script is not None and name in argv:
            (cwd / name).write_text(script)
    return subprocess.run(["sbatch", "--parsable", *argv], env=env, cwd=cwd, capture_output=True, text=True)


def _ended(job_id: str) -> dict[str, str]:
    deadline = time.monotonic() + 90
    while True:
        out = subprocess.run(["scontrol", "-o", "show", "job", job_id], capture_output=True, text=True).stdout
        recs = parse_scontrol_jobs(out)  # an array: one record a task, each must have ended (and written)
        if recs and all(r.get("JobState") not in ("PENDING", "RUNNING", "COMPLETING", "CONFIGURING") for r in recs):
            return recs[0]
        assert time.monotonic() < deadline, f"job {job_id} did not end: {recs}"
        time.sleep(0.3)


def _files(cwd: Path, job_id: str) -> dict[str, str]:
    out = {}
    for path in sorted(cwd.iterdir()):
        if path.is_file() and path.suffix in (".out", ".txt"):
            out[path.name.replace(job_id, "<id>")] = re.sub(rf"\b{job_id}\b", "<id>", path.read_text())
    return out


@pytest.mark.parametrize(("name", "argv", "script"), ROWS, ids=[r[0] for r in ROWS])
def test_sbatch_matches_the_real_one(envs: Any, name: str, argv: list[str], script: str | None) -> None:
    real_env, shim_env, base = envs
    row = re.sub(r"\W+", "-", name)
    real = _submit(argv, real_env, base / row / "real", script)
    shim = _submit(argv, shim_env, base / row / "shim", script)
    assert (shim.returncode, shim.stdout.strip().isdigit()) == (real.returncode, real.stdout.strip().isdigit())
    if real.returncode != 0:
        assert shim.stderr == real.stderr, (real, shim)
        return
    real_id, shim_id = real.stdout.strip(), shim.stdout.strip()
    real_rec, shim_rec = _ended(real_id), _ended(shim_id)
    assert {k: shim_rec.get(k) for k in FIELDS} == {k: real_rec.get(k) for k in FIELDS}
    assert _files(base / row / "shim", shim_id) == _files(base / row / "real", real_id)
