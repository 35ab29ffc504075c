"""Parsers of Slurm's output and the state table (a test per row), with property tests for hostile text."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from frontdesk.backends.base import JobState
from frontdesk.backends.slurm.parse import (
    SLURM_STATES,
    inventory_from_records,
    parse_exit_code,
    parse_memory_value,
    parse_sacct,
    parse_scontrol_jobs,
    parse_scontrol_records,
    parse_slurm_duration,
    parse_state,
    parse_usage_file,
    record_to_status,
    sacct_to_statuses,
)

EXPECTED = [
    ("PENDING", JobState.PENDING),
    ("CONFIGURING", JobState.PENDING),
    ("REQUEUED", JobState.PENDING),
    ("REQUEUE_FED", JobState.PENDING),
    ("REQUEUE_HOLD", JobState.PENDING),
    ("RESV_DEL_HOLD", JobState.PENDING),
    ("RUNNING", JobState.RUNNING),
    ("COMPLETING", JobState.RUNNING),
    ("RESIZING", JobState.RUNNING),
    ("SIGNALING", JobState.RUNNING),
    ("STAGE_OUT", JobState.RUNNING),
    ("SUSPENDED", JobState.SUSPENDED),
    ("STOPPED", JobState.SUSPENDED),
    ("COMPLETED", JobState.COMPLETED),
    ("FAILED", JobState.FAILED),
    ("SPECIAL_EXIT", JobState.FAILED),
    ("CANCELLED", JobState.CANCELLED),
    ("REVOKED", JobState.CANCELLED),
    ("TIMEOUT", JobState.TIMEOUT),
    ("OUT_OF_MEMORY", JobState.OUT_OF_MEMORY),
    ("NODE_FAIL", JobState.NODE_FAIL),
    ("PREEMPTED", JobState.PREEMPTED),
    ("BOOT_FAIL", JobState.BOOT_FAIL),
    ("DEADLINE", JobState.DEADLINE),
]

LINE = (
    "JobId=42 JobName=fd-7.1 UserId=ada(1000) GroupId=ada(1000) MCS_label=N/A Priority=4294901759 Nice=0 "
    "Account=(null) QOS=(null) JobState=OUT_OF_MEMORY Reason=OutOfMemory Dependency=(null) Requeue=1 "
    "Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:125 RunTime=00:00:03 TimeLimit=00:10:00 TimeMin=N/A "
    "SubmitTime=2026-12-02T11:12:10 EligibleTime=2026-12-02T11:12:10 StartTime=2026-12-02T11:12:11 "
    "EndTime=2026-12-02T11:12:14 Deadline=N/A Partition=test AllocNode:Sid=localhost:2444 "
    "NodeList=cpu1 BatchHost=cpu1 NumNodes=1 NumCPUs=2 CPUs/Task=2 ReqB:S:C:T=0:0:*:* "
    "TRES=cpu=2,mem=100M,node=1,billing=2 Socks/Node=* MinMemoryNode=100M "
    "Command=/srv/front desk/jobs/7 a=b/1/sbatch.sh WorkDir=/srv/front desk/jobs/7 a=b/1 "
    "StdErr=/srv/front desk/jobs/7 a=b/1/stderr StdIn=/dev/null StdOut=/srv/front desk/jobs/7 a=b/1/stdout "
    "Power= TresPerNode=gres:gpu:a100:1"
)


@pytest.mark.parametrize(("raw", "state"), EXPECTED, ids=[r for r, _ in EXPECTED])
def test_state_table_row(raw: str, state: JobState) -> None:
    assert SLURM_STATES[raw] is state
    assert parse_state(raw) is state


def test_the_table_has_no_row_without_a_test() -> None:
    assert set(SLURM_STATES) == {r for r, _ in EXPECTED}


@pytest.mark.parametrize("raw", ["CANCELLED by 0", "CANCELLED+", "cancelled", " CANCELLED "])
def test_state_spellings(raw: str) -> None:
    assert parse_state(raw) is JobState.CANCELLED


def test_unknown_state_is_none() -> None:
    assert parse_state("WIBBLE") is None


def test_scontrol_line_with_spaces_and_equals_in_paths() -> None:
    (rec,) = parse_scontrol_jobs(LINE + "\n\nNo jobs\n")
    assert rec["StdOut"] == "/srv/front desk/jobs/7 a=b/1/stdout"
    assert rec["WorkDir"] == "/srv/front desk/jobs/7 a=b/1"
    assert rec["AllocNode:Sid"] == "localhost:2444" and rec["Power"] == ""
    st_ = record_to_status(rec)
    assert st_ is not None
    assert (st_.state, st_.exit_code, st_.signal, st_.node) == (JobState.OUT_OF_MEMORY, None, None, "cpu1")
    assert st_.reason is not None and "cgroup memory limit" in st_.reason  # not "exit 0", not host memory
    assert st_.stdout_path == Path("/srv/front desk/jobs/7 a=b/1/stdout")
    assert st_.ended_at is not None and st_.started_at is not None and st_.ended_at - st_.started_at == 3


def test_running_job_has_no_exit_or_end() -> None:
    line = LINE.replace("JobState=OUT_OF_MEMORY", "JobState=COMPLETING")
    st_ = record_to_status(parse_scontrol_jobs(line)[0])
    assert st_ is not None and st_.state is JobState.RUNNING and st_.exit_code is None and st_.ended_at is None


def test_pending_job_has_no_start() -> None:
    line = LINE.replace("JobState=OUT_OF_MEMORY", "JobState=PENDING").replace(
        "StartTime=2026-12-02T11:12:11", "StartTime=Unknown"
    )
    st_ = record_to_status(parse_scontrol_jobs(line)[0])
    assert st_ is not None and st_.started_at is None and st_.reason == "OutOfMemory"


_KEY = st.from_regex(r"[A-Z][A-Za-z]{0,10}", fullmatch=True)
_VALUE = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\n\r\x85\u2028\u2029"),
    max_size=40,
).filter(lambda v: not re.search(r"(^|\s)[A-Z][A-Za-z0-9_:/]*=", v) and v.strip() == v)


@given(st.dictionaries(_KEY, _VALUE, max_size=8))
def test_scontrol_round_trip(fields: dict[str, str]) -> None:
    fields.pop("JobId", None)
    line = "JobId=1 " + " ".join(f"{k}={v}" for k, v in fields.items())
    (rec,) = parse_scontrol_jobs(line)
    assert rec == {"JobId": "1", **fields} or line.strip() != line


@given(st.text(max_size=300))
def test_parsers_never_raise_on_garbage(text: str) -> None:
    for rec in parse_scontrol_jobs(text):
        record_to_status(rec)
    parse_usage_file(text)
    sacct_to_statuses(parse_sacct(text))
    parse_slurm_duration(text)
    parse_memory_value(text)
    parse_exit_code(text)
    parse_state(text)


@pytest.mark.parametrize(
    ("raw", "want"),
    [("3:0", (3, None)), ("0:9", (0, 9)), ("0:125", (0, None)), ("", (None, None)), ("x:y", (None, None))],
)
def test_exit_codes(raw: str, want: tuple[int | None, int | None]) -> None:
    assert parse_exit_code(raw) == want


@pytest.mark.parametrize(
    ("raw", "secs"),
    [
        ("00:00:05", 5),
        ("1-02:03:04", 93784),
        ("10:30", 630),
        ("01:02.500", 62.5),
        ("UNLIMITED", None),
        ("", None),
    ],
)
def test_durations(raw: str, secs: float | None) -> None:
    assert parse_slurm_duration(raw) == secs


@pytest.mark.parametrize(
    ("raw", "size"),
    [("100M", 100 * 2**20), ("2G", 2 * 2**30), ("1024K", 2**20), ("512", 512), ("", None), ("lots", None)],
)
def test_memory(raw: str, size: int | None) -> None:
    assert parse_memory_value(raw) == size


def test_usage_file() -> None:
    text = "rc=3\nended=1796210145\ntimes:\n0m0.004s 0m0.000s\n1m0.806s 0m0.072s\npeak_bytes=113106944\n"
    usage, rc, ended = parse_usage_file(text)
    assert (rc, ended, usage.peak_rss_bytes, usage.cpu_seconds) == (3, 1796210145.0, 113106944, 60.878)


def test_sacct_rows_take_usage_from_steps() -> None:
    text = (
        "77|COMPLETED|0:0|2026-12-02T10:00:00|2026-12-02T10:00:01|2026-12-02T10:05:01|cpu1|"
        "04:59.500|\n77.batch|COMPLETED|0:0|2026-12-02T10:00:01|2026-12-02T10:00:01|"
        "2026-12-02T10:05:01|cpu1|04:59.500|2048K\n78|CANCELLED by 1000|0:15|2026-12-02T10:00:00|"
        "None|2026-12-02T10:00:02|None assigned|00:00:00|\n"
    )
    got = sacct_to_statuses(parse_sacct(text))
    assert got["77"].state is JobState.COMPLETED and got["77"].usage is not None
    assert got["77"].usage.peak_rss_bytes == 2 * 2**20 and got["77"].usage.cpu_seconds == 299.5
    assert got["78"].state is JobState.CANCELLED and got["78"].signal == 15


def test_inventory() -> None:
    nodes = parse_scontrol_records(
        "NodeName=a100n1 Arch=x86_64 CPUTot=16 RealMemory=32000 Gres=gpu:a100:2(S:0) Partitions=training\n"
        "NodeName=cpu1 CPUTot=8 RealMemory=16000 Gres=(null)\n",
        "NodeName",
    )
    parts = parse_scontrol_records(
        "PartitionName=agent Default=NO MaxTime=00:30:00 Nodes=cpu[1-2] State=UP\n", "PartitionName"
    )
    inv = inventory_from_records(nodes, parts)
    assert inv.cpus == 24 and inv.memory_bytes == 48000 * 2**20
    assert inv.gpus == ({"node": "a100n1", "type": "a100", "count": 2},)
    assert inv.pools[0]["name"] == "agent" and inv.pools[0]["max_time_s"] == 1800


def test_a_key_inside_a_job_name_is_part_of_the_name() -> None:
    line = (
        "JobId=7 JobName=eval X=1 run UserId=root(0) GroupId=root(0) JobState=RUNNING "
        "Comment=lr=0.1 Note=x WorkDir=/w/a=b StdOut=/w/a=b/out Nice=0"
    )
    rec = parse_scontrol_jobs(line)[0]
    assert rec["JobName"] == "eval X=1 run" and rec["UserId"] == "root(0)" and rec["JobState"] == "RUNNING"
    assert rec["Comment"] == "lr=0.1 Note=x" and rec["WorkDir"] == "/w/a=b" and rec["Nice"] == "0"


@given(st.text(alphabet="abcXYZ =_-.", min_size=1, max_size=30).filter(lambda t: t.strip() == t and t))
def test_any_job_name_round_trips(name: str) -> None:
    rec = parse_scontrol_jobs(f"JobId=7 JobName={name} UserId=ada(1000) JobState=PENDING")[0]
    assert rec["JobName"] == name and rec["UserId"] == "ada(1000)"
