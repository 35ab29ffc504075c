"""Slurm's accounting records as a job source for `frontdesk analyze` (`--sacct FILE|-|run`).

`frontdesk analyze` joins the observer's commands with job records. The gateway's journal holds the jobs that
went through frontdesk; every other job of the cluster is in Slurm's accounting, read here from the output of

    sacct -a -X -P -n -S START -E END -o JobIDRaw,User,State,Submit,Start,End,Partition,AllocCPUS,AllocTRES,JobName

(`FIELDS`; `--sacct FILE` reads it saved by an admin, `-` from stdin). `--sacct run` asks sacct twice over the
observed window: the records without JobName (`RECORD_FIELDS`), then the names alone (`-o JobIDRaw,JobName`).
sacct prints a newline in a job name as it is, so a name holding a newline and `99|alice|COMPLETED|...` printed a
whole forged record of another user's; now a name reaches only the failure signature of the job whose id leads
its line. Each line becomes a `Job`; a job the journal already holds (same Slurm id) counts once. Agent
or person is decided as for any job without a submit context: by the observer's submissions of the same user
within seconds. Pure but for `run_sacct`. Every line is validated: a malformed one is skipped and counted, never
a traceback; a file that is not sacct output at all is one error line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from frontdesk.backends.slurm.parse import parse_slurm_time, parse_state
from frontdesk.errors import UserError
from frontdesk.telemetry.analyze import Job, signature

__all__ = ["FIELDS", "RECORD_FIELDS", "SacctJobs", "command", "job_names", "parse", "read", "run_sacct"]

FIELDS = ("JobIDRaw", "User", "State", "Submit", "Start", "End", "Partition", "AllocCPUS", "AllocTRES", "JobName")
RECORD_FIELDS = FIELDS[:-1]
"""What `run_sacct` asks for a job's record: no text a user writes."""
MAX_BYTES = 512 * 1024 * 1024
_GPU = re.compile(r"gres/gpu(?::[^=,]+)?=(\d+)")
_ID = re.compile(r"\d+(?:_\d+)?")


@dataclass(frozen=True)
class SacctJobs:
    """The jobs read, and how many lines were not job records (steps are not counted: -X leaves them out)."""

    jobs: tuple[Job, ...]
    skipped: int


def _gpus(tres: str) -> int:
    m = _GPU.findall(tres)
    return sum(int(n) for n in m)


def _job(cells: list[str]) -> Job | None:
    raw_id, user, raw_state, submit, start, end, partition, cpus, tres, name = cells[: len(FIELDS)]
    state = parse_state(raw_state)
    submitted = parse_slurm_time(submit)
    if not _ID.fullmatch(raw_id) or state is None or submitted is None or not user:
        return None
    started, ended = parse_slurm_time(start), parse_slurm_time(end)
    ran = max(0.0, ended - started) if started is not None and ended is not None else 0.0
    n_cpus = int(cpus) if cpus.isdigit() else 1
    return Job(
        user, False, state.value, submitted, started, ended, ran * n_cpus, ran * _gpus(tres), partition or None,
        None, signature(state.value, None, name), raw_id,
    )  # fmt: skip


def parse(lines: Iterable[str], names: Mapping[str, str] | None = None) -> SacctJobs:
    """Jobs from `sacct -P -n -o <FIELDS>` lines, or with `names` (id → job name) from `-o <RECORD_FIELDS>`
    lines, each exactly that wide; a job step (`123.batch`) or a malformed line is skipped."""
    jobs, skipped = [], 0
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            continue
        cells = line.split("|")
        if names is not None:
            cells = [*cells, names.get(cells[0], "")] if len(cells) == len(RECORD_FIELDS) else []
        job = _job(cells) if len(cells) >= len(FIELDS) else None
        if job is None:
            skipped += 1
        else:
            jobs.append(job)
    return SacctJobs(tuple(jobs), skipped)


def _checked(result: SacctJobs, where: str) -> SacctJobs:
    if not result.jobs and result.skipped:
        raise UserError(f"{where}: no sacct record in it (expected `{command(None, None)}` output)")
    return result


def read(path: Path | str) -> SacctJobs:
    """From a file (`-`: stdin)."""
    import sys

    if str(path) == "-":
        return _checked(parse(sys.stdin), "stdin")
    p = Path(path)
    try:
        if p.stat().st_size > MAX_BYTES:
            raise UserError(f"{p}: larger than {MAX_BYTES // 2**20} MiB; cut it with sacct -S/-E")
        with p.open(encoding="utf-8", errors="replace") as f:
            return _checked(parse(f), str(p))
    except OSError as exc:
        raise UserError(f"cannot read {p}: {exc.strerror}") from exc


def command(start: float | None, end: float | None) -> str:
    """The sacct command line (for the docs and error messages)."""
    return " ".join(_argv(start, end))


def _argv(start: float | None, end: float | None, fields: Sequence[str] = FIELDS) -> list[str]:
    import time

    argv = ["sacct", "-a", "-X", "-P", "-n", "-o", ",".join(fields)]
    for flag, at in (("-S", start), ("-E", end)):
        if at is not None:
            argv += [flag, time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(at))]
    return argv


def run_sacct(start: float | None, end: float | None) -> SacctJobs:
    """Run sacct over [start, end]; a cluster without accounting is one error line."""
    from frontdesk.errors import CommandFailed
    from frontdesk.proc import run

    try:
        out = run(_argv(start, end, RECORD_FIELDS), timeout=120.0)
        named = run(_argv(start, end, ("JobIDRaw", "JobName")), timeout=120.0)
    except CommandFailed as exc:
        raise UserError(f"sacct failed: {exc.message}") from exc
    return parse(out.stdout.split("\n"), job_names(named.stdout))


def job_names(text: str) -> dict[str, str]:
    """id → name from `sacct -P -n -o JobIDRaw,JobName` (a line a name's newline forged can only name a job, and
    the first line for an id wins; names are the users' text anyway)."""
    names: dict[str, str] = {}
    for line in text.split("\n"):
        job, sep, name = line.partition("|")
        if sep and _ID.fullmatch(job):
            names.setdefault(job, name)
    return names
