"""`sacct` from the gateway's cached view plus the gateway's own history of Slurm jobs.

Handles -j/--jobs, -u/--user, -a/--allusers, -n/--noheader, -P/--parsable2, -p/--parsable, -o/--format,
-X/--allocations, -s/--state, -S/-E (default: since midnight, as sacct). One row per job (allocations;
steps are not in the view), with MaxRSS/TotalCPU from what frontdesk measured. Anything else goes to the
real sacct.
"""

from __future__ import annotations

import argparse
import pwd
import re
import sys
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from frontdesk.backends.slurm.cliparser import ShimParser
from frontdesk.backends.slurm.clitext import LONG_STATES, ShimArgs, fmt_duration, split_list, user_name
from frontdesk.shims.common import current_user, exec_real, fetch_view, gateway_down

__all__ = ["main", "format_sacct", "rows_from_view", "DEFAULT_FIELDS"]

DEFAULT_FIELDS = "JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode"
_WIDTH = {
    "jobid": 12,
    "jobidraw": 12,
    "exitcode": 8,
    "state": 10,
    "start": 19,
    "end": 19,
    "submit": 19,
    "workdir": 20,
    "nodelist": 15,
    "maxrss": 10,
}
_LEFT = {"jobid", "jobidraw"}
_NAMES = {
    "jobid": "JobID",
    "jobidraw": "JobIDRaw",
    "jobname": "JobName",
    "partition": "Partition",
    "account": "Account",
    "alloccpus": "AllocCPUS",
    "ncpus": "NCPUS",
    "state": "State",
    "exitcode": "ExitCode",
    "elapsed": "Elapsed",
    "start": "Start",
    "end": "End",
    "submit": "Submit",
    "nodelist": "NodeList",
    "user": "User",
    "timelimit": "Timelimit",
    "reqmem": "ReqMem",
    "workdir": "WorkDir",
    "nnodes": "NNodes",
    "qos": "QOS",
    "reason": "Reason",
    "uid": "UID",
    "maxrss": "MaxRSS",
    "totalcpu": "TotalCPU",
}


def _iso(ts: Any) -> str:
    return datetime.fromtimestamp(float(ts)).strftime("%Y-%m-%dT%H:%M:%S") if ts else "Unknown"


def _job_row(job: Mapping[str, str]) -> dict[str, str]:
    g = job.get
    start = g("StartTime", "Unknown")
    uid = g("UserId", "")
    return {
        "jobid": _job_id(job),
        "jobidraw": g("JobId", ""),
        "jobname": g("JobName", ""),
        "partition": g("Partition", ""),
        "account": g("Account", "").replace("(null)", ""),
        "alloccpus": g("NumCPUs", "0") if start not in ("Unknown", "None") else "0",
        "ncpus": g("NumCPUs", "0"),
        "state": g("JobState", "").split(" ", 1)[0],
        "exitcode": g("ExitCode", "0:0"),
        "elapsed": _elapsed(g("RunTime", "00:00:00")),
        "start": start,
        "end": g("EndTime", "Unknown"),
        "submit": g("SubmitTime", "Unknown"),
        "nodelist": g("NodeList", "").replace("(null)", "None assigned") or "None assigned",
        "user": user_name(uid),
        "timelimit": fmt_duration(g("TimeLimit", "")),
        "reqmem": g("MinMemoryNode") or g("MinMemoryCPU", ""),
        "workdir": g("WorkDir", ""),
        "nnodes": g("NumNodes", "1"),
        "qos": g("QOS", ""),
        "reason": g("Reason", ""),
        "uid": uid[uid.find("(") + 1 : -1] if "(" in uid else uid,
    }


def _job_id(job: Mapping[str, str]) -> str:
    """sacct's JobID: `77_3` for an array task, `77_[4-9%2]` for its still-pending tasks, else the id."""
    array, task = job.get("ArrayJobId", ""), job.get("ArrayTaskId", "")
    if not array.isdigit() or not task:
        return job.get("JobId", "")
    return f"{array}_{task}" if task.isdigit() else f"{array}_[{task}]"


def _wanted(jobid: str, ids: list[str]) -> bool:
    """`-j 77` names the job, or every task of array 77; `-j 77_3` one task."""
    return not ids or jobid in ids or jobid.split("_", 1)[0] in ids


def _order(jobid: str) -> tuple[int, int]:
    head, _, task = jobid.partition("_")
    return (int(head) if head.isdigit() else 0, int(task) if task.isdigit() else -1)


def _history_row(h: Mapping[str, Any]) -> dict[str, str]:
    bid = str(h["backend_id"])
    return {
        "jobid": bid,
        "jobidraw": bid,
        "jobname": str(h.get("name") or f"fd-{h['id']}"),
        "partition": h.get("partition") or "",
        "state": h.get("state", ""),
        "exitcode": f"{h.get('exit_code') or 0}:{h.get('signal') or 0}",
        "start": _iso(h.get("started_at")),
        "end": _iso(h.get("ended_at")),
        "submit": _iso(h.get("submitted_at")),
        "user": h.get("principal", ""),
        "nnodes": "1",
    }


def rows_from_view(view: Mapping[str, Any]) -> list[dict[str, str]]:
    """One sacct-like row per job: the controller's jobs, then ended ones only the gateway remembers.

    MaxRSS and TotalCPU are what frontdesk measured of the job (its cgroup's peak, its children's CPU)."""
    rows = [_job_row(j) for j in view.get("jobs", [])]
    seen = {r["jobid"] for r in rows}  # an array task the controller still holds is listed by its own id
    rows += [r for r in (_history_row(h) for h in view.get("history", [])) if r["jobid"] not in seen]
    usage = view.get("usage") or {}
    for row in rows:
        used = usage.get(row["jobid"]) or {}
        peak, cpu = used.get("peak_rss_bytes"), used.get("cpu_seconds")
        row["maxrss"] = f"{int(peak) // 1024}K" if isinstance(peak, int | float) else ""
        row["totalcpu"] = _cpu_time(float(cpu)) if isinstance(cpu, int | float) else ""
    return rows


def _cpu_time(seconds: float) -> str:
    """sacct's TotalCPU: `MM:SS.mmm` under an hour, `[D-]HH:MM:SS` above."""
    if seconds < 3600:
        m, s = divmod(seconds, 60)
        return f"{int(m):02d}:{s:06.3f}"
    days, rest = divmod(int(seconds), 86400)
    text = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}-{text}" if days else text


_UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 604800}


def when(text: str, now: float) -> float:
    """Epoch seconds of sacct's -S/-E: `now[-N[unit]]`, `YYYY-MM-DD[THH:MM[:SS]]`, `HH:MM[:SS]` (today)."""
    t = text.strip().lower()
    m = re.fullmatch(r"now(?:([-+])(\d+)(second|minute|hour|day|week)?s?)?", t)
    if m:
        delta = int(m.group(2) or 0) * _UNITS[m.group(3) or "second"]
        return now - delta if m.group(1) == "-" else now + delta
    try:
        if re.fullmatch(r"\d{1,2}:\d{2}(:\d{2})?", t):
            day = datetime.fromtimestamp(now).strftime("%Y-%m-%d")
            return datetime.fromisoformat(f"{day}T{t}").timestamp()
        return datetime.fromisoformat(text.strip()).timestamp()
    except ValueError:
        raise ShimArgs(f"time {text!r}") from None


def in_window(row: Mapping[str, str], start: float | None, end: float | None, now: float) -> bool:
    """sacct's -S/-E: jobs that were around between start and end (running ones count as ending now)."""

    def ts(raw: str) -> float | None:
        try:
            return datetime.fromisoformat(raw).timestamp()
        except ValueError:
            return None

    ended = ts(row.get("end", "")) or now
    began = ts(row.get("start", "")) or ts(row.get("submit", "")) or now
    return (start is None or ended >= start) and (end is None or began <= end)


def _elapsed(raw: str) -> str:
    text = raw.strip()
    if "-" in text:
        return text
    parts = text.split(":")
    while len(parts) < 3:
        parts.insert(0, "00")
    return ":".join(p.zfill(2) for p in parts)


def _fields(spec: str) -> list[tuple[str, int | None]]:
    out = []
    for item in spec.split(","):
        item = item.strip()
        if not item:
            continue
        name, _, width = item.partition("%")
        key = name.lower()
        if key not in _NAMES:
            raise ShimArgs(f"field {name!r}")
        if width and not (width.isascii() and width.isdigit() and len(width) <= 4 and int(width) > 0):
            raise ShimArgs(f"field width {width[:20]!r}")  # sacct's own reading (and no 100 GB line here)
        out.append((key, int(width) if width else None))
    return out


_ID = re.compile(r"[1-9][0-9]{0,9}(_[0-9]{1,7})?")
_STATE_WORDS = frozenset(LONG_STATES) | frozenset(LONG_STATES.values())


def _check_filters(args: argparse.Namespace) -> None:
    """ShimArgs for what sacct refuses with its own message: a bad -j id, an unknown -s state or -u user."""
    if any(not _ID.fullmatch(i) for i in split_list(args.jobs)):
        raise ShimArgs("a job id sacct reads itself")
    if any(s.upper() not in _STATE_WORDS for s in split_list(args.state)):
        raise ShimArgs("a job state sacct does not know")
    for user in split_list(args.user):
        try:
            pwd.getpwuid(int(user)) if user.isdigit() else pwd.getpwnam(user)
        except (KeyError, ValueError, OverflowError):
            raise ShimArgs("a user sacct does not know") from None


def format_sacct(rows: Sequence[Mapping[str, str]], spec: str, *, header: bool, parsable: str | None) -> str:
    """sacct's text: fixed width, or `|`-separated (`--parsable2`; `--parsable` adds a trailing `|`)."""
    fields = _fields(spec)
    lines = []
    if parsable is not None:
        tail = "|" if parsable == "p" else ""
        if header:
            lines.append("|".join(_NAMES[k] for k, _ in fields) + tail)
        lines += ["|".join(r.get(k, "") for k, _ in fields) + tail for r in rows]
    else:
        widths = [w or _WIDTH.get(k, 10) for k, w in fields]

        def cell(text: str, key: str, w: int) -> str:
            text = text if len(text) <= w else text[: w - 1] + "+"
            return text.ljust(w) if key in _LEFT else text.rjust(w)

        if header:
            names = (cell(_NAMES[k], k, w) for (k, _), w in zip(fields, widths, strict=True))
            lines.append(" ".join(names) + " ")
            lines.append(" ".join("-" * w for w in widths) + " ")
        for r in rows:
            lines.append(" ".join(cell(r.get(k, ""), k, w) for (k, _), w in zip(fields, widths, strict=True)) + " ")
    return "".join(line + "\n" for line in lines)


def _parser() -> argparse.ArgumentParser:
    p = ShimParser(prog="sacct", add_help=False, allow_abbrev=False)
    p.add_argument("-j", "--jobs", action="append")
    p.add_argument("-u", "--user", "--uid", action="append")
    p.add_argument("-a", "--allusers", action="store_true")
    p.add_argument("-n", "--noheader", action="store_true")
    p.add_argument("-P", "--parsable2", action="store_true")
    p.add_argument("-p", "--parsable", action="store_true")
    p.add_argument("-o", "--format")
    p.add_argument("-X", "--allocations", action="store_true")
    p.add_argument("-s", "--state", action="append")
    p.add_argument("-S", "--starttime")
    p.add_argument("-E", "--endtime")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the shim; returns sacct's exit status."""
    args_in = list(sys.argv[1:] if argv is None else argv)
    try:
        args = _parser().parse_args(args_in)
        fmt = args.format or DEFAULT_FIELDS
        _fields(fmt)
        _check_filters(args)
        now = time.time()
        midnight = datetime.fromtimestamp(now).replace(hour=0, minute=0, second=0, microsecond=0).timestamp()
        start = when(args.starttime, now) if args.starttime else (None if args.jobs else midnight)
        end = when(args.endtime, now) if args.endtime else None
    except ShimArgs as exc:
        exec_real("sacct", args_in, str(exc))
    from frontdesk.errors import FrontdeskError

    try:
        view = fetch_view(history=True)
    except FrontdeskError as exc:
        gateway_down("sacct", args_in, exc)
    rows = rows_from_view(view)
    ids = split_list(args.jobs)
    users = split_list(args.user) or ([] if args.allusers or ids else [current_user()])
    states = {LONG_STATES.get(s.upper(), s.upper()) for s in split_list(args.state)}
    rows = [
        r
        for r in rows
        if _wanted(r["jobid"], ids) and (not users or r["user"] in users) and (not states or r["state"] in states)
    ]
    rows = [r for r in rows if in_window(r, start, end, now)]
    rows.sort(key=lambda r: _order(r["jobid"]))
    parsable = "P" if args.parsable2 else ("p" if args.parsable else None)
    sys.stdout.write(format_sacct(rows, fmt, header=not args.noheader, parsable=parsable))
    return 0
