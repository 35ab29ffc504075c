"""The shims' pure parts: squeue/sacct formatting (golden) and filters (sbatch: test_sbatch_options.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from frontdesk.backends.slurm.clitext import ShimArgs, fmt_duration, short_state
from frontdesk.backends.slurm.squeue_text import DEFAULT_FORMAT, LONG_FORMAT, _parser, _states, format_rows, select_rows
from frontdesk.shims.sacct import format_sacct, rows_from_view


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
        format_sacct([], "JobID,AveVMSize", header=True, parsable=None)


def test_sacct_maxrss_and_totalcpu_come_from_frontdesks_measurements() -> None:
    view = {"jobs": VIEW, "usage": {"12": {"peak_rss_bytes": 300 * 2**20, "cpu_seconds": 65.5}}}
    rows = [r for r in rows_from_view(view) if r["jobid"] in ("12", "10")]
    assert format_sacct(rows, "JobID,MaxRSS,TotalCPU", header=False, parsable="P") == "10||\n12|307200K|01:05.500\n"


def test_sacct_time_window() -> None:
    from datetime import datetime

    from frontdesk.shims.sacct import in_window, when

    now = datetime.fromisoformat("2026-12-02T12:00:00").timestamp()
    assert when("now-2hours", now) == now - 7200 and when("now", now) == now
    assert when("2026-12-02T10:30", now) == now - 5400 and when("11:00", now) == now - 3600
    with pytest.raises(ShimArgs):
        when("last tuesday", now)
    old = {"start": "2026-12-01T08:00:00", "end": "2026-12-01T09:00:00", "submit": "2026-12-01T07:00:00"}
    running = {"start": "2026-12-02T11:00:00", "end": "Unknown", "submit": "2026-12-02T10:00:00"}
    assert not in_window(old, when("now-1day", now), None, now) and in_window(running, when("now-1day", now), None, now)
    assert in_window(old, None, when("2026-12-01T08:30", now), now)
    assert not in_window(running, None, when("2026-12-01T08:30", now), now)


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


@given(st.text(alphabet="%.0123456789ijuTtMlDRrNCmPVSebZaqpoEk |-:x", max_size=40), st.booleans())
def test_any_format_string_renders_one_line_per_job(fmt: str, header: bool) -> None:
    rows = select_rows(VIEW, states=set())
    text = format_rows(rows, fmt, header=header)
    assert text.count("\n") == len(rows) + (1 if header else 0)
