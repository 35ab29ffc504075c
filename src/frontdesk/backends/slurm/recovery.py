"""Finding a gateway's Slurm attempts again after a crash mid-submit: by the job id sbatch printed, as recorded.

sbatch's answer (`--parsable`: the job id) goes straight into `<home>/slurm-ids/submitted/<key>`, a file the
gateway makes (0600, in its own state directory) before sbatch runs and sbatch itself writes, so the id is
there even when the gateway died before reading it. A stuck attempt is the job that file names, provided Slurm
runs that job as the attempt's uid; no file or no id in it means sbatch never answered (the attempt is lost
and runs again). An array's record is kept under its first task's key, which each later task's key leads to
(array_submit.first_key_of); its key table (array_submit, written before sbatch) gives each task's index.

Nothing a submitter writes identifies a job: not its name, its comment (but for one launch's nonce, below),
its working directory nor its output path. Before, recovery matched on those, so a plain `sbatch -J fd-7.1`,
`--comment=fd-7.1@<gateway>` or a crafted `--chdir` (a `|` or a newline in it forges a row of `sacct -P`) was
adopted as frontdesk job 7's attempt: its state, its end, its cancel.

An sbatch can outlive its gateway (slurmctld slow to answer): before it runs, its launch record (launches.py)
names its process and the launch's tag, the last word of its --comment with a nonce new for that launch. A
stuck attempt with no id recorded but a launch record first waits for that very process (it writes its answer
into the record as it ends), at most `command_timeout`, then kills it; if still no id, it asks the controller
for the job carrying exactly that tag and run as the attempt's uid (a job submitted before, by anyone, lacks
the nonce), and only then is the attempt lost and launched again. A live gateway whose sbatch timed out asks
the same way before it fails the attempt (also when sbatch failed: it reports a lost reply for a job it queued).
Left open: an sbatch killed after slurmctld took the job but before it printed, whose job then ended and left
the controller (MinJobAge) before the gateway asked, or whose request slurmctld handles only after the gateway
asked: it runs again.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Collection, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from frontdesk.backends.slurm import launches
from frontdesk.backends.slurm.launches import Launch
from frontdesk.errors import BackendError, CommandFailed

if TYPE_CHECKING:
    from frontdesk.backends.runas import RunAs
    from frontdesk.backends.slurm.backend import SlurmBackend

__all__ = ["lookup", "record_path", "sbatch"]

RECORDS = "submitted"


def record_path(home: Path, key: str) -> Path:
    """The file sbatch writes its answer into for attempt `key` (an array: its first task's key); made ready."""
    where = home / "slurm-ids" / RECORDS
    where.mkdir(parents=True, exist_ok=True)
    return where / key


def _recorded(home: Path, key: str) -> str | None:
    """The job id sbatch wrote for `key`, None when it wrote none (it never ran, failed or is still running)."""
    try:
        with open(home / "slurm-ids" / RECORDS / key, encoding="utf-8", errors="replace") as fh:
            text = fh.read(256)
    except OSError:
        return None
    bid = text.strip().split(";", 1)[0]  # `--parsable`: `ID` or `ID;CLUSTER`
    return bid if bid.isascii() and bid.isdigit() else None


async def lookup(backend: SlurmBackend, keys: Sequence[str], owners: Mapping[str, int] | None = None) -> dict[str, str]:
    """Slurm ids of attempts (`844`, or `844_3` for an array task) from what sbatch recorded for them; with
    `owners` (each key's uid), only jobs Slurm runs as that uid (a job it no longer knows is taken: the record
    is the gateway's own)."""
    from frontdesk.backends.slurm.array_submit import array_keys, first_key_of  # (they import record_path)

    home = Path(backend.settings.home)
    wanted = set(keys)
    found: dict[str, str] = {}
    if owners is not None:
        await _orphans(backend, home, keys, owners)
    for key in keys:
        first: str | None = key
        bid = _recorded(home, key)
        if bid is None and (first := first_key_of(home, key)) is not None:
            bid = _recorded(home, first)  # a later task of an array: the record is its first task's
        if bid is None or first is None:
            continue
        table = array_keys(home, first)
        if table:
            found.update({k: f"{bid}_{index}" for index, k in table.items() if k in wanted})
        else:
            found.setdefault(key, bid)
    if owners is not None and found:
        uids = await _uids(backend, {b.split("_", 1)[0] for b in found.values()})
        found = {k: b for k, b in found.items() if k in owners and uids.get(b.split("_", 1)[0], owners[k]) == owners[k]}
    for key, bid in found.items():
        job_dir = _job_dir(backend, key)
        if job_dir is not None:
            backend._dirs.setdefault(bid, job_dir)
    return found


def _job_dir(backend: SlurmBackend, key: str) -> Path | None:
    """The attempt's folder (core/attempt: `<jobs>/<id>/attempt-<n>`) from its key `fd-<id>.<n>`."""
    job, _, attempt = key.removeprefix("fd-").partition(".")
    if not (job.isdigit() and attempt.isdigit()):
        return None
    return Path(backend.settings.home) / "jobs" / job / f"attempt-{attempt}"


async def _uids(backend: SlurmBackend, jobs: Collection[str]) -> dict[str, int]:
    """The uid Slurm runs each job (or array) as: from the controller's table (parsed so that no job's text
    poses as another's record), else from sacct asked for the job id and uid only, no text a user writes."""
    records, _ = await backend.table.fetch(0.0)
    out: dict[str, int] = {}
    for record in records.values():
        uid = _uid(record.get("UserId", ""))
        for job in {record.get("JobId", ""), record.get("ArrayJobId", "")} & set(jobs):
            if uid is not None:
                out[job] = uid
    rest = sorted(set(jobs) - set(out))
    if rest and backend._accounting:
        argv = ["sacct", "--parsable2", "--noheader", "-X", "-j", ",".join(rest), "--format=JobIDRaw,UID"]
        res = await backend._run(argv, check=False)
        for line in res.stdout.split("\n"):
            cells = line.split("|")
            job = cells[0].split("_", 1)[0]
            if len(cells) == 2 and job in rest and cells[1].isdigit():
                out[job] = int(cells[1])
    return out


def _uid(user_id: str) -> int | None:
    """The uid in scontrol's `UserId=alice(1001)`."""
    inside = user_id.rpartition("(")[2].rstrip(")")
    return int(inside) if inside.isdigit() else None


async def sbatch(
    backend: SlurmBackend,
    key: str,
    launch: Launch,
    argv: Sequence[str],
    cwd: str,
    env: Mapping[str, str],
    who: RunAs,
    script: str | None = None,
) -> str:
    """Run sbatch for `key` (its answer kept in the record, its pid in the launch record before it runs) as `who`
    (a root gateway: as the submitter, `script` on its stdin); the job id. Failed or timed out: the job carrying
    the launch's tag, if slurmctld took it after all (sbatch can report a socket timeout
    for a job it queued), else the failure is raised."""
    home = Path(backend.settings.home)
    record = await asyncio.to_thread(record_path, home, key)  # kept should the gateway die (lookup)
    try:
        result = await backend._run(
            argv,
            cwd=cwd,
            env=env,
            record=record,
            started=partial(launches.started, home, key, launch),
            who=who,
            input=script,
        )
    except CommandFailed:
        bid = await _by_tag(backend, launch.tag, who.uid)  # timed out, or failed talking after slurmctld took it
        if bid is None:
            raise
        return bid
    bid = result.stdout.strip().split(";", 1)[0]
    if not bid.isdigit():
        raise BackendError(f"sbatch printed no job id: {result.stdout.strip()[:200]!r}")
    if who.foreign and (await _uids(backend, {bid})).get(bid) != who.uid:
        # sbatch ran as the submitter, who controls what it prints (LD_PRELOAD, ptrace): never adopt another's job
        raise BackendError(f"sbatch printed job {bid}, which Slurm does not run as uid {who.uid}")
    return bid


async def _orphans(backend: SlurmBackend, home: Path, keys: Sequence[str], owners: Mapping[str, int]) -> None:
    """Attempts with no id recorded but a launch: wait for their sbatch (then kill it), then ask the controller
    for the job with the launch's tag; an id found is written into the record, as sbatch would have."""
    from frontdesk.backends.slurm.array_submit import first_key_of  # (it imports this module)

    firsts = {(first_key_of(home, k) or k): owners[k] for k in keys if k in owners}
    pending = {f: launch for f in firsts if _recorded(home, f) is None and (launch := launches.read(home, f))}
    deadline = time.monotonic() + backend.config.command_timeout
    while any(launches.running(launch) for launch in pending.values()) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    for launch in pending.values():
        launches.kill(launch)  # ran longer than a live gateway lets sbatch run
    for first, launch in pending.items():
        if _recorded(home, first) is None and (bid := await _by_tag(backend, launch.tag, firsts[first])):
            await asyncio.to_thread(_adopt, home, first, bid)


async def _by_tag(backend: SlurmBackend, tag: str, uid: int) -> str | None:
    """The job (an array: its id) whose comment ends with `tag` and which Slurm runs as `uid`; the oldest."""
    records, _ = await backend.table.fetch(0.0)
    ids = set()
    for record in records.values():
        words = record.get("Comment", "").split()
        if words and words[-1] == tag and _uid(record.get("UserId", "")) == uid:
            ids.add(record.get("ArrayJobId") or record.get("JobId", ""))
    return min((b for b in ids if b.isdigit()), key=int, default=None)


def _adopt(home: Path, key: str, bid: str) -> None:
    """Write the job id found for `key` into its record (as sbatch writes it: `ID`)."""
    path = record_path(home, key)
    tmp = path.with_name(f".{key}.found")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(f"{bid}\n")
    os.replace(tmp, path)
