"""Pure parsing of what Slurm prints: `scontrol -o show job`, `sacct --parsable2`, the job's usage file.

The table from Slurm's job states to `JobState` is `frontdesk.jobs.state.SLURM_STATES` (re-exported here;
each row tested). No clock, no subprocess: text in, data out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from frontdesk.backends.base import BackendStatus, Inventory, JobState, Usage
from frontdesk.durations import parse_slurm_clock
from frontdesk.jobs.state import SLURM_STATES

__all__ = [
    "SLURM_STATES",
    "SACCT_FIELDS",
    "JobRecord",
    "checked_jobs",
    "MAX_RECORD_CHARS",
    "parse_exit_code",
    "parse_memory_value",
    "parse_sacct",
    "parse_scontrol_jobs",
    "parse_scontrol_records",
    "inventory_from_records",
    "parse_slurm_duration",
    "parse_slurm_time",
    "parse_state",
    "parse_usage_file",
    "record_to_status",
    "sacct_to_statuses",
]

SACCT_FIELDS = ("JobIDRaw", "State", "ExitCode", "Submit", "Start", "End", "NodeList", "TotalCPU", "MaxRSS")
"""The `sacct --format` fields `parse_sacct` expects, in this order: none a user writes (no JobName, Comment,
WorkDir...), since sacct prints a `|` or a newline in them as it is and a job named `x\n5|COMPLETED|0:0|...`
would print a row for job 5."""
_SACCT_ID = re.compile(r"[0-9]{1,12}(?:_[0-9]{1,9})?(?:\.[A-Za-z0-9+_-]{1,32})?")

MAX_RECORD_CHARS = 1 << 20
"""A longer `scontrol -o` line is no job record (garbage from a wrapper or a fake on PATH): skipped unscanned,
since matching keys across tens of MB holds the GIL for seconds (the gateway parses in a thread)."""
_KEY = re.compile(r"(?:^| )([A-Z][A-Za-z0-9_]*(?:[:/][A-Za-z0-9_]+)*)=")
_EMPTY = {"", "(null)", "None", "Unknown", "N/A", "n/a"}
_CHILDREN = re.compile(r"(\d+)m([\d.]+)s")

JobRecord = dict[str, str]
"""One job of `scontrol -o show job`: key → raw value."""


def parse_state(raw: str) -> JobState | None:
    """Our state for Slurm's (`CANCELLED by 0`, `CANCELLED+` and lower case too); None when unknown."""
    word = raw.strip().split(" ", 1)[0].rstrip("+").upper()
    return SLURM_STATES.get(word)


def parse_scontrol_jobs(text: str) -> list[JobRecord]:
    """Records from `scontrol -o show job` (one job a line; values may hold spaces); see `checked_jobs`."""
    return checked_jobs(text)[0]


def checked_jobs(text: str) -> tuple[list[JobRecord], set[str]]:
    """(records, ids to ask again alone) from `scontrol -o show job`.

    scontrol prints a newline in a job name, comment or path as it is, so `sbatch -J $'x\\nJobId=7 ...'`
    writes a line that poses as job 7's record. A record cut by such a newline (the next line is no record,
    or it has no JobState: the rest is on the next line, which is dropped with it) and a JobId on two lines
    are not trusted; their ids are returned so the caller can ask `scontrol -o show job ID` for each alone,
    where no other job's text can pose as it. Lines are split at `\\n` only (Python's splitlines also
    splits at U+2028 and \\x1c, which scontrol prints inside a name)."""
    records: list[JobRecord | None] = []
    suspect: set[str] = set()
    rest = False  # a record was cut: the next record line is its rest, whatever id it names
    for raw in text.split("\n"):
        line = raw.strip()
        last = records[-1] if records else None
        if not line.startswith("JobId="):
            if line and last is not None:  # the last record went on here: cut
                suspect.add(last.get("JobId", ""))
                records[-1], rest = None, True
            records.append(None)
            continue
        record = _record(line, "JobId") if len(line) <= MAX_RECORD_CHARS else None
        if last is not None and "JobState" not in last:  # cut before its JobState: this line is its rest
            suspect.add(last.get("JobId", ""))
            records[-1], rest = None, True
        if rest:
            record, rest = None, False
        records.append(record)
    kept = [r for r in records if r is not None]
    seen: dict[str, int] = {}
    for r in kept:
        seen[r.get("JobId", "")] = seen.get(r.get("JobId", ""), 0) + 1
    twice = {bid for bid, n in seen.items() if n > 1}
    suspect |= twice
    suspect.discard("")
    return [r for r in kept if r.get("JobId", "") not in twice], suspect


def parse_scontrol_records(text: str, first_key: str) -> list[JobRecord]:
    """Records from any `scontrol -o show ENTITY` whose lines start with `first_key=`."""
    records = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith(first_key + "=") or len(line) > MAX_RECORD_CHARS:
            continue
        records.append(_record(line, first_key))
    return records


def _record(line: str, first_key: str) -> JobRecord:
    matches = list(_KEY.finditer(line))
    if first_key == "JobId":
        matches = _real_keys(matches)
    record: JobRecord = {}
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(line)
        record.setdefault(m.group(1), line[m.end() : end])
    return record


_USER_TEXT = frozenset(
    {
        "JobName",
        "Comment",
        "AdminComment",
        "SystemComment",
        "Command",
        "WorkDir",
        "StdErr",
        "StdIn",
        "StdOut",
        "MailUser",
    }
)
"""Values a user writes: a `Key=` inside them (a job named `eval X=1 run`) is text unless scontrol prints that key."""
_JOB_KEYS = frozenset(
    "Account AccrueTime AdminComment AllocNode:Sid ArrayJobId ArrayTaskId ArrayTaskThrottle BatchFlag BatchHost "
    "BurstBuffer BurstBufferState CPUs/Task Command Comment Container ContainerID Contiguous CoreSpec CpusPerTres "
    "Deadline DelayBoot Dependency DerivedExitCode EligibleTime EndTime ExcNodeList ExitCode Features GroupId "
    "HetJobId HetJobIdSet HetJobOffset JobId JobName JobState KillOInInvalidDependent LastSchedEval Licenses "
    "MCS_label MailType MailUser MemPerTres MinCPUsNode MinMemoryCPU MinMemoryNode MinTmpDiskNode Network Nice "
    "NodeList NtasksPerN:B:S:C NtasksPerTRES NumCPUs NumNodes NumTasks OverSubscribe Partition Power "
    "PreemptEligibleTime PreemptTime Prefer Priority QOS Reason Reboot ReqB:S:C:T ReqNodeList Requeue Reservation "
    "ResizeTime Restarts RunTime SchedNodeList Scheduler SecsPreSuspend Socks/Node StartTime StdErr StdIn StdOut "
    "SubmitTime SuspendTime Switches SystemComment TRES ThreadSpec TimeLimit TimeMin TresBind TresFreq TresPerJob "
    "TresPerNode TresPerSocket TresPerTask UserId Wait-for-Switch WorkDir".split()
)


_BEFORE_NAME = frozenset({"JobId", "ArrayJobId", "ArrayTaskId", "ArrayTaskThrottle", "HetJobId", "HetJobOffset"})
"""Keys scontrol prints before JobName: never inside a user-written value."""


def _real_keys(matches: list[re.Match[str]]) -> list[re.Match[str]]:
    """Drop `Word=` matches inside a user-written value unless scontrol itself prints that key there.

    Inside a value (after JobName=, Comment=, WorkDir=...) a key scontrol prints is text when the line has
    it already or again later (each key is printed once: a job named `x JobState=COMPLETED` is still
    PENDING), or when scontrol prints it only before the name (ArrayJobId)."""
    out: list[re.Match[str]] = []
    later: dict[str, int] = {}
    for m in matches:
        later[m.group(1)] = later.get(m.group(1), 0) + 1
    taken: set[str] = set()
    for m in matches:
        key = m.group(1)
        later[key] -= 1
        if (
            out
            and out[-1].group(1) in _USER_TEXT
            and (key not in _JOB_KEYS or key in taken or later[key] > 0 or key in _BEFORE_NAME)
        ):
            continue
        taken.add(key)
        out.append(m)
    return out


def parse_slurm_time(raw: str | None) -> float | None:
    """Epoch seconds from Slurm's local `2026-12-02T11:12:10`; None for Unknown/None/N/A."""
    if raw is None or raw.strip() in _EMPTY:
        return None
    try:
        return datetime.fromisoformat(raw.strip()).timestamp()
    except ValueError:
        return None


def parse_slurm_duration(raw: str | None) -> float | None:
    """Seconds from `[D-]HH:MM:SS`, `MM:SS` or `MM:SS.mmm` (sacct TotalCPU); None for empty/UNLIMITED."""
    if raw is None or raw.strip() in _EMPTY or raw.strip() in ("UNLIMITED", "INVALID"):
        return None
    try:
        return parse_slurm_clock(raw, bare_unit=1)
    except ValueError:
        return None


def parse_memory_value(raw: str | None) -> int | None:
    """Bytes from Slurm's `1234K`, `50M`, `2G` (sacct MaxRSS, scontrol MinMemory); None when empty."""
    if raw is None or raw.strip() in _EMPTY:
        return None
    m = re.fullmatch(r"([\d.]+)([KMGTP]?)[n|c]?", raw.strip(), re.IGNORECASE)
    if not m:
        return None
    mult = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40, "P": 2**50}[m.group(2).upper()]
    try:
        return int(float(m.group(1)) * mult)
    except ValueError:
        return None


def parse_exit_code(raw: str | None) -> tuple[int | None, int | None]:
    """(exit code, signal) from `3:0`; Slurm's pseudo-signals above 64 (125 for an OOM kill) are dropped."""
    if raw is None or ":" not in raw:
        return None, None
    code, _, sig = raw.strip().partition(":")
    if not code.isdigit() or not sig.isdigit():
        return None, None
    signal = int(sig)
    return int(code), (signal if 0 < signal <= 64 else None)


def _opt_path(raw: str | None) -> Path | None:
    return None if raw is None or raw.strip() in _EMPTY else Path(raw)


def record_to_status(record: Mapping[str, str], usage: Usage | None = None) -> BackendStatus | None:
    """A BackendStatus for one scontrol record; None when its state is not one Slurm documents."""
    raw_state = record.get("JobState", "")
    state = parse_state(raw_state)
    if state is None:
        return None
    exit_code, signal = parse_exit_code(record.get("ExitCode"))
    ended = state.terminal
    reason = record.get("Reason")
    if state is JobState.OUT_OF_MEMORY:
        exit_code = None if exit_code == 0 else exit_code  # `0:125`: killed, not an exit 0
        reason = "killed at the job's cgroup memory limit (Slurm task/cgroup, --mem)"
    return BackendStatus(
        backend_id=record.get("JobId", ""),
        state=state,
        exit_code=exit_code if ended else None,
        signal=signal if ended else None,
        submitted_at=parse_slurm_time(record.get("SubmitTime")),
        started_at=parse_slurm_time(record.get("StartTime")) if state != JobState.PENDING else None,
        ended_at=parse_slurm_time(record.get("EndTime")) if ended else None,
        usage=usage,
        reason=None if reason is None or reason in _EMPTY else reason,
        stdout_path=_opt_path(record.get("StdOut")),
        stderr_path=_opt_path(record.get("StdErr")),
        node=None if record.get("NodeList", "") in _EMPTY else record.get("NodeList"),
        raw_state=raw_state.split(" ", 1)[0] or None,
    )


def parse_usage_file(text: str) -> tuple[Usage, int | None, float | None]:
    """(usage, exit status, end time) from the job's own `slurm-usage.txt` (see render)."""
    values: dict[str, str] = {}
    times: list[str] = []
    in_times = False
    for line in text.splitlines():
        if line.strip() == "times:":
            in_times = True
            continue
        if in_times and _CHILDREN.search(line) and "=" not in line:
            times.append(line)  # bash `times`: the shell's own, then its children's user/sys
            continue
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip()
    cpu = None
    spans = _CHILDREN.findall(values.get("children", times[1] if len(times) > 1 else ""))
    if spans:
        cpu = round(sum(int(m) * 60 + float(s) for m, s in spans), 3)
    peak = int(values["peak_bytes"]) if values.get("peak_bytes", "").isdigit() else None
    rc = int(values["rc"]) if values.get("rc", "").isdigit() else None
    ended = float(values["ended"]) if values.get("ended", "").isdigit() else None
    return Usage(cpu_seconds=cpu, peak_rss_bytes=peak), rc, ended


def parse_sacct(text: str) -> list[dict[str, str]]:
    """Rows of `sacct --parsable2 --noheader --format=<SACCT_FIELDS>`.

    No field asked for is text a user writes, so a row is exactly that many cells and starts with a job id
    (`77`, `844_3`, `77.batch`); any other line is dropped, not read: it can only be garbage."""
    rows = []
    for line in text.split("\n"):  # not splitlines(): U+2028 or \x1c is no line break to sacct
        cells = line.split("|")
        if len(cells) != len(SACCT_FIELDS) or not _SACCT_ID.fullmatch(cells[0]):
            continue
        rows.append(dict(zip(SACCT_FIELDS, cells, strict=True)))
    return rows


def sacct_to_statuses(rows: Iterable[Mapping[str, str]]) -> dict[str, BackendStatus]:
    """One status per job from sacct rows: the job row's state, its steps' CPU time and peak RSS."""
    jobs: dict[str, Mapping[str, str]] = {}
    cpu: dict[str, float] = {}
    peak: dict[str, int] = {}
    for row in rows:
        job_id, _, step = row["JobIDRaw"].partition(".")
        if not step:
            jobs[job_id] = row
        rss = parse_memory_value(row.get("MaxRSS"))
        if rss is not None:
            peak[job_id] = max(peak.get(job_id, 0), rss)
        if not step:
            total = parse_slurm_duration(row.get("TotalCPU"))
            if total is not None:
                cpu[job_id] = total
    out = {}
    for job_id, row in jobs.items():
        state = parse_state(row["State"])
        if state is None:
            continue
        code, sig = parse_exit_code(row.get("ExitCode"))
        usage = Usage(cpu_seconds=cpu.get(job_id), peak_rss_bytes=peak.get(job_id))
        out[job_id] = BackendStatus(
            backend_id=job_id,
            state=state,
            exit_code=code if state.terminal else None,
            signal=sig if state.terminal else None,
            submitted_at=parse_slurm_time(row.get("Submit")),
            started_at=parse_slurm_time(row.get("Start")),
            ended_at=parse_slurm_time(row.get("End")) if state.terminal else None,
            usage=usage,
            node=None if row.get("NodeList", "") in _EMPTY else row.get("NodeList"),
            raw_state=row["State"].split(" ", 1)[0],
        )
    return out


def _gres_gpus(gres: str) -> list[tuple[str | None, int]]:
    out = []
    for item in gres.split(","):
        parts = item.split("(")[0].split(":")
        if parts[0] != "gpu" or len(parts) < 2:
            continue
        count = parts[-1]
        if count.isdigit():
            out.append((parts[1] if len(parts) == 3 else None, int(count)))
    return out


def inventory_from_records(nodes: Iterable[Mapping[str, str]], partitions: Iterable[Mapping[str, str]]) -> Inventory:
    """The cluster as `scontrol -o show node` / `show partition` describe it."""
    cpus = 0
    memory = 0
    gpus: list[dict[str, object]] = []
    shapes: dict[str, dict[str, Any]] = {}  # per partition: its largest node, its GPU types
    for node in nodes:
        node_cpus = int(node.get("CPUTot", "0")) if node.get("CPUTot", "").isdigit() else 0
        mem = node.get("RealMemory", "")
        node_mem = int(mem) * 2**20 if mem.isdigit() else 0
        cpus, memory = cpus + node_cpus, memory + node_mem
        node_gpus = _gres_gpus(node.get("Gres", ""))
        for gpu_type, count in node_gpus:
            gpus.append({"node": node.get("NodeName"), "type": gpu_type, "count": count})
        for name in filter(None, (n.strip() for n in node.get("Partitions", "").split(","))):
            shape = shapes.setdefault(name, {"max_node_memory_bytes": 0, "max_node_cpus": 0, "gpu_types": set()})
            shape["max_node_memory_bytes"] = max(shape["max_node_memory_bytes"], node_mem)
            shape["max_node_cpus"] = max(shape["max_node_cpus"], node_cpus)
            shape["gpu_types"].update(t or "gpu" for t, n in node_gpus if n)
    pools = []
    for part in partitions:
        shape = shapes.get(part.get("PartitionName", ""), {})
        pools.append(
            {
                "name": part.get("PartitionName"),
                "nodes": part.get("Nodes"),
                "max_time_s": parse_slurm_duration(part.get("MaxTime")),
                "default": part.get("Default") == "YES",
                "state": part.get("State"),
                "max_node_memory_bytes": shape.get("max_node_memory_bytes"),
                "max_node_cpus": shape.get("max_node_cpus"),
                "gpu_types": sorted(shape.get("gpu_types", ())),
            }
        )
    return Inventory(cpus=cpus, memory_bytes=memory, gpus=tuple(gpus), pools=tuple(pools))
