"""`squeue`'s answer from the gateway's cached view (pure): -u/--user, --me, -j/--jobs, -h, -o/--format,
-t/--states, -p/--partition, -n/--name, -l/--long, -a, --noconvert, -S, -r; anything else is `Passthrough`.

The squeue shim (shims/squeue.py) and the gateway's Slurm plug-in (which renders for the socket client and the
per-user files) run this same code."""

from __future__ import annotations

import argparse
import functools
from collections.abc import Mapping, Sequence
from typing import Any

from frontdesk.backends.slurm.cliparser import ShimParser
from frontdesk.backends.slurm.clitext import (
    LONG_STATES,
    ShimArgs,
    fmt_duration,
    short_state,
    split_list,
    user_name,
)
from frontdesk.backends.slurm.squeue_checks import (
    HEADERS,
    MAX_ANSWER_CHARS,
    MAX_WIDTH,
    SPEC,
    Passthrough,
    check_filters,
    check_format,
)

# fmt: off
__all__ = ["DEFAULT_FORMAT", "LONG_FORMAT", "MAX_ANSWER_CHARS", "MAX_WIDTH", "Passthrough", "answer",
           "check_format", "expand_tasks", "format_rows", "has_clock", "select_rows", "sort_rows", "stale_note"]
# fmt: on

DEFAULT_FORMAT = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"
LONG_FORMAT = "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R"
ACTIVE = {
    "PENDING",
    "RUNNING",
    "SUSPENDED",
    "COMPLETING",
    "CONFIGURING",
    "RESIZING",
    "SIGNALING",
    "STAGE_OUT",
    "REQUEUED",
    "REQUEUE_HOLD",
    "REQUEUE_FED",
    "RESV_DEL_HOLD",
    "STOPPED",
}
_REASON_STATES = {"PENDING", "TIMEOUT", "OUT_OF_MEMORY", "DEADLINE", "FAILED"}
"""squeue's %R shows "(reason)" for these, the node list otherwise."""
_UNCUT = {"M", "l"}
"""Durations squeue widens instead of cutting."""
_CACHED_ARGV_CHARS = 4096
"""Longer command lines are parsed each time, not cached (4,096 cached 1 MB bodies would hold 4 GB)."""


def _time(raw: str) -> str:
    return "N/A" if raw in ("", "Unknown", "None", "(null)") else raw


_FIELDS = {
    "A": ("JobId", ""),
    "P": ("Partition", ""),
    "j": ("JobName", ""),
    "r": ("Reason", "None"),
    "C": ("NumCPUs", ""),
    "Z": ("WorkDir", ""),
    "a": ("Account", "(null)"),
    "q": ("QOS", "(null)"),
    "Q": ("Priority", ""),
    "o": ("Command", ""),
    "E": ("Dependency", "(null)"),
    "K": ("ArrayTaskId", "N/A"),
}
"""Codes printed as one field of the job's record: (field, what squeue prints when it is missing)."""
_TIMES = {"V": "SubmitTime", "S": "StartTime", "e": "EndTime"}
"""Codes printed as a time stamp ("N/A" when unknown)."""


def _value(code: str, job: Mapping[str, str]) -> str:
    if code in _FIELDS:
        key, default = _FIELDS[code]
        return job.get(key, default)
    if code in _TIMES:
        return _time(job.get(_TIMES[code], ""))
    state = job.get("JobState", "")
    match code:
        case "i":
            return _array_id(job)
        case "u":
            return user_name(job.get("UserId", ""))
        case "U":
            uid = job.get("UserId", "")
            return uid[uid.find("(") + 1 : -1] if "(" in uid else uid
        case "t":
            return short_state(state)
        case "T":
            return state.split(" ", 1)[0]
        case "M":
            return fmt_duration(job.get("RunTime", "0:00"))
        case "l":
            return fmt_duration(job.get("TimeLimit", "UNLIMITED"))
        case "D":
            return job.get("NumNodes", "1").split("-")[0]
        case "R":
            nodes = job.get("NodeList", "")
            if state.split(" ", 1)[0] in _REASON_STATES or not nodes or nodes == "(null)":
                return f"({job.get('Reason', 'None')})"
            return nodes
        case "N":
            nodes = job.get("NodeList", "")
            return "" if nodes == "(null)" else nodes
        case "m":
            return job.get("MinMemoryNode") or job.get("MinMemoryCPU", "0")
        case "b":
            return job.get("TresPerNode", "") or "N/A"
        case "g":
            return user_name(job.get("GroupId", ""))
        case "f":
            return job.get("Features", "(null)")
        case "n" | "x":
            nodes = job.get("ReqNodeList" if code == "n" else "ExcNodeList", "")
            return "" if nodes == "(null)" else nodes
        case "k":
            comment = job.get("Comment", "(null)")  # scontrol -o prints `Comment=x  StdErr=`: one space is its
            return comment[:-1] if comment.endswith(" ") else comment
        case "p":
            prio = job.get("Priority", "")
            return f"{int(prio) / 2**32:.14f}" if prio.isdigit() else prio
        case "F":
            return job.get("ArrayJobId", job.get("JobId", ""))
        case "%":
            return "%"
    return ""


def expand_tasks(jobs: Sequence[Mapping[str, str]], ids: Sequence[str], every: bool) -> list[Mapping[str, str]]:
    """Pending tasks folded into their array's record (`ArrayTaskId=2-9%2`) as one row each: all of them
    (`-r`), or those named as `77_3` in `-j` (squeue prints `77_3` for either)."""
    from frontdesk.backends.slurm.arrays import parse_task_list, split_task_id

    wanted: dict[str, set[int]] = {}
    for item in ids:
        split = split_task_id(item)
        if split is not None:
            wanted.setdefault(split[0], set()).add(split[1])
    out: list[Mapping[str, str]] = []
    for job in jobs:
        array, task = job.get("ArrayJobId", ""), job.get("ArrayTaskId", "")
        if not array.isdigit() or not task or task.isdigit() or not (every or array in wanted):
            out.append(job)
            continue
        try:
            tasks = parse_task_list(task)
        except ValueError:
            out.append(job)
            continue
        indices = [i for a, b, step in tasks.ranges for i in range(a, b + 1, step)]
        if not every:
            indices = [i for i in indices if i in wanted[array]]
        out += [{**job, "ArrayTaskId": str(i)} for i in indices]
    return out


def _array_id(job: Mapping[str, str]) -> str:
    """`77_3` for an array task, `77_[0-3]` for its pending rest, the plain id otherwise (squeue %i)."""
    array, task = job.get("ArrayJobId", ""), job.get("ArrayTaskId", "")
    if not array or not task or array in ("(null)", "0"):
        return job.get("JobId", "")
    return f"{array}_{task}" if task.isdigit() else f"{array}_[{task}]"


def _render(fmt: str, job: Mapping[str, str] | None) -> str:
    out, pos = [], 0
    for m in SPEC.finditer(fmt):
        out.append(fmt[pos : m.start()])
        right, width, code = m.group(1) == ".", m.group(2), m.group(3)
        text = HEADERS.get(code, code.upper()) if job is None else _value(code, job)
        if width.strip("0"):  # squeue reads a width of 0 as none; answer() passed wider ones through
            w = MAX_WIDTH if len(width) > 6 else min(int(width), MAX_WIDTH)
            text = text if job is not None and code in _UNCUT else text[:w]
            text = text.rjust(w) if right else text.ljust(w)
        out.append(text)
        pos = m.end()
    out.append(fmt[pos:])
    return "".join(out)


def format_rows(jobs: Sequence[Mapping[str, str]], fmt: str, header: bool) -> str:
    """squeue's text for these jobs in this -o format."""
    lines = [_render(fmt, None)] if header else []
    size = sum(len(line) for line in lines)
    for job in jobs:
        lines.append(_render(fmt, job))
        size += len(lines[-1]) + 1
        if size > MAX_ANSWER_CHARS:
            raise Passthrough(f"an answer over {MAX_ANSWER_CHARS >> 20} MiB")
    return "".join(line + "\n" for line in lines)


def _states(values: Sequence[str]) -> set[str] | None:
    wanted = {s.upper() for s in split_list(values)}
    if not wanted:
        return None
    if "ALL" in wanted:
        return set()
    return {LONG_STATES.get(s, s) for s in wanted}


def select_rows(
    jobs: Sequence[Mapping[str, str]],
    *,
    users: Sequence[str] = (),
    ids: Sequence[str] = (),
    states: set[str] | None = None,
    partitions: Sequence[str] = (),
    names: Sequence[str] = (),
) -> list[Mapping[str, str]]:
    """squeue's filters; no -t means the active states only (as squeue does, with or without -j)."""
    out = []
    for job in jobs:
        state = job.get("JobState", "").split(" ", 1)[0]
        if states is None and state not in ACTIVE:
            continue
        if states and state not in states:
            continue
        if users and not _user_matches(job.get("UserId", ""), users):
            continue
        if ids and job.get("JobId") not in ids and job.get("ArrayJobId") not in ids and _array_id(job) not in ids:
            continue
        if partitions and job.get("Partition") not in partitions:
            continue
        if names and job.get("JobName") not in names:
            continue
        out.append(job)
    return sort_rows(out, DEFAULT_SORT)


DEFAULT_SORT = "P,t,-p"
_NUMERIC = {"i", "A", "F", "p", "Q", "C", "D", "U"}


def _user_matches(user_id: str, users: Sequence[str]) -> bool:
    """`-u ada` or `-u 1000` against scontrol's `ada(1000)`."""
    name = user_name(user_id)
    uid = user_id[user_id.find("(") + 1 : -1] if "(" in user_id else ""
    return name in users or (uid != "" and uid in users)


def sort_rows(jobs: list[Mapping[str, str]], spec: str) -> list[Mapping[str, str]]:
    """squeue's `-S`/SQUEUE_SORT: comma keys, `-` for descending; ties newest first, as squeue lists them."""
    out = sorted(jobs, key=lambda j: -int(j.get("JobId", "0") or 0) if j.get("JobId", "").isdigit() else 0)
    for key in reversed([k.strip() for k in spec.split(",") if k.strip()]):
        desc, code = key.startswith("-"), key.lstrip("+-")[:1]

        def value(job: Mapping[str, str], code: str = code) -> tuple[float, str]:
            if code in ("t", "T"):  # squeue compares the long state names
                return (0.0, job.get("JobState", "").split(" ", 1)[0])
            raw = job.get("Priority", "0") if code == "p" else _value(code, job)
            num = raw.split("_", 1)[0]
            return (float(num), "") if code in _NUMERIC and num.replace(".", "", 1).isdigit() else (0.0, raw)

        out.sort(key=value, reverse=desc)
    return out


def _parser() -> argparse.ArgumentParser:
    p = ShimParser(prog="squeue", add_help=False, allow_abbrev=False)
    p.add_argument("-u", "--user", action="append")
    p.add_argument("--me", action="store_true")
    p.add_argument("-j", "--jobs", action="append")
    p.add_argument("-h", "--noheader", action="store_true")
    p.add_argument("-o", "--format")
    p.add_argument("-t", "--states", action="append")
    p.add_argument("-p", "--partition", action="append")
    p.add_argument("-n", "--name", action="append")
    p.add_argument("-l", "--long", action="store_true")
    p.add_argument("-a", "--all", action="store_true")
    p.add_argument("--noconvert", action="store_true")
    p.add_argument("-S", "--sort")
    p.add_argument("-r", "--array", action="store_true")
    p.add_argument("jobs_positional", nargs="*")
    return p


def _parse(args_in: tuple[str, ...]) -> argparse.Namespace:
    """Parsed once per (short) command line: the gateway re-renders the same ones every snapshot (read only)."""
    if sum(len(a) for a in args_in) > _CACHED_ARGV_CHARS:
        return _parser().parse_args(list(args_in))
    return _parse_cached(args_in)


@functools.lru_cache(maxsize=4096)
def _parse_cached(args_in: tuple[str, ...]) -> argparse.Namespace:
    return _parser().parse_args(list(args_in))


def has_clock(args_in: Sequence[str]) -> bool:
    """Whether the answer prints the current time (`-l` without `-h`): never kept rendered in a file."""
    return bool(_parse(tuple(args_in)).long and not _parse(tuple(args_in)).noheader)


def answer(
    args_in: Sequence[str], environ: Mapping[str, str], me: str, view: Mapping[str, Any] | None
) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of squeue for this command line, from the cached view (pure).

    With `view=None` only the command line is checked (Passthrough or nothing); the gateway formats with
    the same function for the socket-only client."""
    try:
        args = _parse(tuple(args_in))
    except ShimArgs as exc:
        raise Passthrough(str(exc)) from None
    if args.jobs_positional:  # squeue takes no positionals: let the real one say so
        raise Passthrough("positional arguments")
    if environ.get("SQUEUE_FORMAT2") and not args.format:
        raise Passthrough("SQUEUE_FORMAT2 (the -O field list)")
    fmt = args.format or (LONG_FORMAT if args.long else environ.get("SQUEUE_FORMAT") or DEFAULT_FORMAT)
    check_format(fmt)
    check_filters(args, environ)
    if view is None:
        return 0, "", ""
    users = split_list(args.user) + ([me] if args.me else [])
    ids = split_list(args.jobs)
    states = args.states or ([environ["SQUEUE_STATES"]] if environ.get("SQUEUE_STATES") else [])
    jobs = view["jobs"]
    if args.array or any("_" in i for i in ids):
        jobs = expand_tasks(jobs, ids, every=args.array)
    rows = select_rows(
        jobs,
        users=users,
        ids=ids,
        states=_states(states),
        partitions=split_list(args.partition),
        names=split_list(args.name),
    )
    if ids and not rows and not any(j.get("JobId") in ids for j in jobs) and len(ids) == 1 and "_" not in ids[0]:
        return 1, "", "slurm_load_jobs error: Invalid job id specified\n"
    head = ""
    if args.long and not args.noheader:
        import time

        head = time.strftime("%a %b %d %H:%M:%S %Y") + "\n"
    order = args.sort or environ.get("SQUEUE_SORT")
    if order:
        rows = sort_rows(rows, order)
    return 0, head + format_rows(rows, fmt, header=not args.noheader), stale_note(view)


def stale_note(view: Mapping[str, Any]) -> str:
    """A line for stderr when the gateway served its last view because the controller did not answer."""
    if not view.get("stale"):
        return ""
    import time

    when = time.strftime("%H:%M:%S", time.localtime(float(view.get("as_of") or 0)))
    return f"squeue: frontdesk: the Slurm controller does not answer ({view['stale']}); jobs as of {when}\n"
