"""The shims' pure parts: squeue/sacct formatting (golden), filters, and sbatch's command-line reading."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from frontdesk.shims.common import ShimArgs, fmt_duration, short_state
from frontdesk.shims.sacct import format_sacct, rows_from_view
from frontdesk.shims.sbatch import build_spec, parse_directives, slurm_memory, slurm_time
from frontdesk.shims.squeue import DEFAULT_FORMAT, LONG_FORMAT, _parser, _states, format_rows, select_rows


def _job(jid: str, state: str, **kw: str) -> dict[str, str]:
    base = {
        "JobId": jid,
        "JobName": f"job-{jid}",
        "UserId": "ada(1000)",
        "Partition": "hpc",
        "JobState": state,
        "Reason": "None",
        "NumNodes": "1",
        "NodeList": "cpu1",
        "NumCPUs": "2",
        "MinMemoryNode": "100M",
        "RunTime": "00:01:05",
        "TimeLimit": "00:30:00",
        "SubmitTime": "2026-12-02T11:00:00",
        "StartTime": "2026-12-02T11:00:01",
        "EndTime": "2026-12-02T11:30:01",
        "Priority": str(1000 - int(jid)),
        "ExitCode": "0:0",
        "Account": "(null)",
        "QOS": "(null)",
        "WorkDir": "/home/ada/w d",
    }
    base.update(kw)
    return base


VIEW = [
    _job("10", "RUNNING"),
    _job("11", "PENDING", Reason="Resources", NodeList="(null)", RunTime="00:00:00", StartTime="Unknown"),
    _job("12", "COMPLETED", Partition="training", NodeList="a100n1", TresPerNode="gres:gpu:a100:1"),
    _job("13", "OUT_OF_MEMORY", Reason="OutOfMemory", ExitCode="0:125"),
    _job(
        "14",
        "RUNNING",
        UserId="bob(1001)",
        JobName="a very long job name",
        TimeLimit="2-00:00:00",
        RunTime="1-02:03:04",
    ),
    _job("15", "FAILED", Reason="NonZeroExitCode", ExitCode="3:0", Partition="agent"),
]


def test_default_and_long_formats(golden: Any) -> None:
    text = format_rows(select_rows(VIEW), DEFAULT_FORMAT, header=True)
    text += format_rows(select_rows(VIEW, states=set()), LONG_FORMAT, header=True)
    golden.check("squeue.txt", text)


def test_custom_format_without_header(golden: Any) -> None:
    fmt = "%i|%j|%u|%t|%T|%M|%l|%D|%C|%m|%R|%r|%b|%Z|%%|%.5i"
    golden.check("squeue-custom.txt", format_rows(select_rows(VIEW, states=set()), fmt, header=False))


def test_filters() -> None:
    ids = lambda rows: [r["JobId"] for r in rows]  # noqa: E731
    assert ids(select_rows(VIEW)) == ["11", "10", "14"]  # active only, squeue's P,t,-p order
    assert ids(select_rows(VIEW, users=["bob"])) == ["14"]
    assert ids(select_rows(VIEW, ids=["12"])) == []  # ended: only with -t
    assert ids(select_rows(VIEW, ids=["12"], states=set())) == ["12"]
    assert ids(select_rows(VIEW, states=_states(["OOM,F"]))) == ["15", "13"]
    assert ids(select_rows(VIEW, states=_states(["pd"]))) == ["11"]
    assert ids(select_rows(VIEW, partitions=["training"], states=set())) == ["12"]


def test_squeue_flag_spellings() -> None:
    ns = _parser().parse_args(["-u", "ada,bob", "--me", "-hj12", "--format=%i", "-tall", "--states=R"])
    assert ns.user == ["ada,bob"] and ns.me and ns.noheader and ns.jobs == ["12"] and ns.format == "%i"
    assert ns.states == ["all", "R"]
    with pytest.raises(ShimArgs):
        _parser().parse_args(["-O", "JobID"])


def test_sacct_formats(golden: Any) -> None:
    history = [
        {
            "id": 3,
            "name": "old",
            "state": "TIMEOUT",
            "backend_id": "7",
            "exit_code": None,
            "signal": 15,
            "partition": "hpc",
            "principal": "ada",
            "submitted_at": None,
            "started_at": None,
            "ended_at": None,
        }
    ]
    rows = rows_from_view({"jobs": VIEW, "history": history})
    text = format_sacct(rows, "JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode", header=True, parsable=None)
    text += format_sacct(rows, "JobIDRaw,State,ExitCode,Elapsed,NodeList,User", header=True, parsable="P")
    text += format_sacct(rows[:2], "jobid%5,state%20", header=False, parsable="p")
    golden.check("sacct.txt", text)


def test_sacct_unknown_field_passes_through() -> None:
    with pytest.raises(ShimArgs):
        format_sacct([], "JobID,MaxRSS", header=True, parsable=None)


@pytest.mark.parametrize(
    ("raw", "text"),
    [("00:00:05", "0:05"), ("01:00:00", "1:00:00"), ("2-00:00:00", "2-00:00:00"), ("UNLIMITED", "UNLIMITED")],
)
def test_durations_like_squeue(raw: str, text: str) -> None:
    assert fmt_duration(raw) == text


def test_short_states() -> None:
    assert [short_state(s) for s in ("PENDING", "RUNNING", "COMPLETING", "OUT_OF_MEMORY")] == [
        "PD",
        "R",
        "CG",
        "OOM",
    ]


SCRIPT = """#!/bin/bash
#SBATCH -J train-it
#SBATCH --mem=4G -c 4   # four cores
#SBATCH -p training
#SBATCH --gres=gpu:a100:2
#SBATCH --time=1-02:00:00
#SBATCH -o logs/%x-%j.out

python train.py
#SBATCH --mem=1G
"""


def _spec(argv: list[str], script: str = SCRIPT) -> dict[str, object]:
    spec, _ = build_spec(argv, "/home/ada/w d", read=lambda p: script)
    return spec


def test_sbatch_reads_directives_and_the_command_line_wins() -> None:
    spec = _spec(["--time=30", "--export=ALL,A=1", "run.sh", "x", "-p", "y"])
    assert spec["name"] == "train-it" and spec["pool"] == "training" and spec["env"] == {"A": "1"}
    assert spec["resources"] == {
        "cpus": 4,
        "memory": 4 * 2**30,
        "walltime": 1800,
        "gpus": 2,
        "gpu": {"type": ["a100"]},
    }
    cmd = spec["command"]
    assert isinstance(cmd, list) and cmd[3:] == [
        "logs/train-it-__FD_JOB__.out",
        "logs/train-it-__FD_JOB__.out",
        "/bin/bash",
        "/home/ada/w d/run.sh",
        "x",
        "-p",
        "y",
    ]
    assert spec["workdir"] == "/home/ada/w d"


def test_sbatch_wrap_and_default_output() -> None:
    spec = _spec(["--wrap", "echo hi", "-D", "sub", "--mem-per-cpu=100", "-c", "2", "-G", "h100:1"])
    assert spec["command"][3:] == ["slurm-__FD_JOB__.out", "slurm-__FD_JOB__.out", "/bin/sh", "-c", "echo hi"]
    assert spec["workdir"] == "/home/ada/w d/sub" and spec["name"] == "wrap"
    assert spec["resources"] == {"cpus": 2, "memory": 200 * 2**20, "gpus": 1, "gpu": {"type": ["h100"]}}


@pytest.mark.parametrize(
    "argv",
    [
        ["-A", "proj", "r.sh"],
        ["--array=1-3", "r.sh"],
        ["-n", "4", "r.sh"],
        ["--dependency=afterok:1", "r.sh"],
        [],
        ["--gres=gpu:1,nic:1", "r.sh"],
    ],
)
def test_sbatch_flags_it_cannot_express_pass_through(argv: list[str]) -> None:
    with pytest.raises(ShimArgs):
        _spec(argv, "#!/bin/sh\ntrue\n")


def test_unknown_directive_in_the_script_passes_through() -> None:
    with pytest.raises(ShimArgs):
        _spec(["r.sh"], "#!/bin/sh\n#SBATCH --account=x\ntrue\n")


def test_directives_stop_at_the_first_command() -> None:
    assert parse_directives(SCRIPT)[-2:] == ["-o", "logs/%x-%j.out"]


@given(st.integers(0, 9), st.integers(0, 23), st.integers(0, 59), st.integers(0, 59))
def test_slurm_time_forms(d: int, h: int, m: int, s: int) -> None:
    assert slurm_time(f"{d}-{h}:{m}:{s}") == d * 86400 + h * 3600 + m * 60 + s
    assert slurm_time(f"{h}:{m}:{s}") == h * 3600 + m * 60 + s
    assert slurm_time(f"{m}:{s}") == m * 60 + s
    assert slurm_time(str(m)) == m * 60


def test_slurm_memory_bare_number_is_megabytes() -> None:
    assert slurm_memory("500") == 500 * 2**20 and slurm_memory("2G") == 2 * 2**30 and slurm_memory("8gb") == 8 * 2**30


def test_shim_install_and_pass_through(tmp_path: Path) -> None:
    import subprocess
    import sys

    from frontdesk.cli.slurm import install_shims

    shims = tmp_path / "shim dir"
    install_shims(shims)
    real = tmp_path / "real"
    real.mkdir()
    fake = real / "squeue"
    fake.write_text('#!/bin/sh\necho REAL "$@"\n')
    fake.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{shims}:{real}:/usr/bin:/bin",
        "FRONTDESK_SOCKET": str(tmp_path / "none.sock"),
    }
    out = subprocess.run([str(shims / "squeue"), "-O", "JobID"], env=env, capture_output=True, text=True)
    assert out.stdout == "REAL -O JobID\n"  # an unknown flag goes to the real command, unchanged
    out = subprocess.run([str(shims / "squeue"), "-h"], env=env, capture_output=True, text=True)
    assert out.stdout == "REAL -h\n"  # no gateway: status questions still get an answer
    assert (shims / "sbatch").read_text().startswith(f"#!{sys.executable}\n")
    json.loads(json.dumps({"ok": True}))


def test_sbatch_dependencies_on_gateway_jobs_become_depends_on() -> None:
    owned = {"101": 7, "102": 8}
    spec, _ = build_spec(["-d", "afterok:101:102", "--wrap", "true"], "/w", resolve=owned.get)
    assert spec["depends_on"] == [7, 8] and spec["fail_action"] == "abort"
    spec, _ = build_spec(["--dependency=afterany:101", "--wrap", "true"], "/w", resolve=owned.get)
    assert spec["depends_on"] == [7] and spec["fail_action"] == "continue"


@pytest.mark.parametrize(
    "dep", ["afterok:999", "afternotok:101", "afterok:101?afterok:102", "singleton", "afterok:101,afterany:102"]
)
def test_sbatch_dependencies_it_cannot_express_pass_through(dep: str) -> None:
    with pytest.raises(ShimArgs):
        build_spec(["-d", dep, "--wrap", "true"], "/w", resolve={"101": 7, "102": 8}.get)


@given(st.text(alphabet="%.0123456789ijuTtMlDRrNCmPVSebZaqpoEk |-:x", max_size=40), st.booleans())
def test_any_format_string_renders_one_line_per_job(fmt: str, header: bool) -> None:
    rows = select_rows(VIEW, states=set())
    text = format_rows(rows, fmt, header=header)
    assert text.count("\n") == len(rows) + (1 if header else 0)
