"""SlurmBackend's job arrays: ONE `sbatch --array` for many attempts, each tracked as `<jobid>_<index>`.

The script (array_script) dispatches on SLURM_ARRAY_TASK_ID; Slurm writes each task's output to
`<array dir>/<index>.out|.err`, links made before sbatch to the task's own job directory, so every task's
files, usage sample and report are where a single job's would be. Before sbatch, the index → attempt-key
table is written under the gateway's home, and sbatch writes the array's id into the record of its first
task's key, so a gateway that crashed mid-submit finds every task again (recovery.lookup).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from frontdesk.backends.base import BackendJob
from frontdesk.backends.runas import for_job
from frontdesk.backends.slurm import array_script, launches, render
from frontdesk.backends.slurm.options import OptionError, validate_passthrough
from frontdesk.backends.slurm.recovery import sbatch
from frontdesk.errors import BackendError, SpecError

if TYPE_CHECKING:
    from frontdesk.backends.slurm.backend import SlurmBackend

__all__ = ["ARRAY_TAG", "array_keys", "first_key_of", "submit_array"]

ARRAY_TAG = "[]"
"""Ends the attempt key in an array's comment tag: `fd-12.1[]@<gateway>`."""


def _keys_file(home: Path, first_key: str) -> Path:
    return home / "slurm-arrays" / f"{first_key}.json"


def _of_link(home: Path, key: str) -> Path:
    return home / "slurm-arrays" / "of" / key


def first_key_of(home: Path, key: str) -> str | None:
    """The first task's key of the array task `key` was handed over in (None: no such array, or `key` is first).

    A task whose own id was stored is no longer stuck, so after a crash mid hand-over the stuck tasks may all be
    later ones: their key leads to the first's record (before, they were found by nothing and ran again)."""
    try:
        first = os.readlink(_of_link(home, key))
    except OSError:
        return None
    return first if first.startswith("fd-") and "/" not in first else None


def array_keys(home: Path, first_key: str) -> dict[int, str]:
    """index → attempt key of the array whose first task's key is `first_key` ({} when unknown)."""
    try:
        data = json.loads(_keys_file(home, first_key).read_text())
        return {int(k): str(v) for k, v in data.items()}
    except (OSError, ValueError, AttributeError):
        return {}


def _options(jobs: Sequence[BackendJob], max_running: int | None, tag: str) -> list[str]:
    first = jobs[0]
    options = [o for o in render.command_line(first, tag, array=True) if not o.startswith("--array")]
    if not any(o.startswith("--comment") for o in options):
        options.append(f"--comment={tag}")
    try:
        options.append(array_script.array_option(jobs, max_running))
    except ValueError as exc:
        raise BackendError(f"sbatch --array: {exc}") from None
    return options


def _prepare(home: Path, jobs: Sequence[BackendJob], text: str, array_dir: Path, links: bool) -> Path:
    """Job dirs, the script, the per-task output links and the key table, before sbatch runs."""
    for job in jobs:
        job.job_dir.mkdir(parents=True, exist_ok=True)
    array_dir.mkdir(parents=True, exist_ok=True)
    script = array_dir / render.SCRIPT_FILE
    script.write_text(text)
    if links:
        for job in jobs:
            out, err = array_script.task_output(array_dir, job.array_index or 0)
            for link, target in ((out, job.job_dir / render.STDOUT_FILE), (err, job.job_dir / render.STDERR_FILE)):
                link.unlink(missing_ok=True)
                link.symlink_to(target)
    table = _keys_file(home, jobs[0].key)
    table.parent.mkdir(parents=True, exist_ok=True)
    tmp = table.with_suffix(".tmp")
    with launches.LOCK:  # the sweep checks and deletes these under it (sweep.py)
        tmp.write_text(json.dumps({str(j.array_index): j.key for j in jobs}))
        os.replace(tmp, table)
        _of_link(home, jobs[0].key).parent.mkdir(exist_ok=True)
        for job in jobs[1:]:  # each later task's way to the array's record (first_key_of)
            link = _of_link(home, job.key)
            link.unlink(missing_ok=True)
            link.symlink_to(jobs[0].key)
    return script


def _check_same(jobs: Sequence[BackendJob]) -> None:
    first = jobs[0]
    if any(j.uid != first.uid or j.extra.get("slurm") != first.extra.get("slurm") for j in jobs[1:]):
        raise BackendError("the tasks of one Slurm array must share their submitter and sbatch options")
    indices = [j.array_index for j in jobs]
    if any(i is None for i in indices) or len(set(indices)) != len(indices):
        raise BackendError("every task of a Slurm array needs its own array index")


async def submit_array(backend: SlurmBackend, jobs: Sequence[BackendJob], max_running: int | None) -> list[str]:
    """One `sbatch --array` for every task; the Slurm id of each task (`<jobid>_<index>`), in order."""
    if not jobs:
        return []
    _check_same(jobs)
    first = jobs[0]
    given = render._slurm_options(first)
    if given is not None:
        try:
            validate_passthrough([o for o in given.options if not o.startswith("--array")])
        except OptionError as exc:
            raise BackendError(f"sbatch options: {exc}") from None
    who = for_job(first.uid, first.extra.get("policy", {}).get("principal"))
    array_dir = first.job_dir / array_script.ARRAY_DIR
    try:
        text = array_script.render_array_script(
            jobs,
            array_dir,
            default_partition=backend.config.partition,
            extra_directives=backend.config.directives,
            gpu=backend._gpu_placement(first),
            nice_shift=backend._nice_shift,
            foreign=who.foreign,
        )
    except SpecError as exc:
        raise BackendError(f"cannot make one Slurm array of these tasks: {exc.message}") from None
    home = Path(backend.settings.home)
    links = given is None and not who.foreign
    tag = f"{first.key}{ARRAY_TAG}@{backend._tag_suffix()}"
    launch = await asyncio.to_thread(launches.begin, home, first.key, tag, time.time())  # first: see launches.LOCK
    script = await asyncio.to_thread(_prepare, home, jobs, text, array_dir, links)
    options = _options(jobs, max_running, launch.tag)
    env = backend._env_for(array_script.common_env(jobs))
    # a root gateway runs sbatch as the submitter (see SlurmBackend.submit), the script on its stdin
    argv = render.sbatch_argv(None if who.foreign else script, options=options)
    cwd, stdin = (str(first.workdir), text) if who.foreign else (str(array_dir), None)
    array_id = await sbatch(backend, first.key, launch, argv, cwd, env, who, stdin)  # kept if we die
    ids = [f"{array_id}_{job.array_index}" for job in jobs]
    dirs: Mapping[str, Path] = {bid: job.job_dir for bid, job in zip(ids, jobs, strict=True)}
    backend._dirs.update(dirs)

    def remember() -> None:
        for bid, job_dir in dirs.items():
            backend._remember(bid, job_dir)

    await asyncio.to_thread(remember)
    return ids
