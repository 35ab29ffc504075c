"""Pure rendering of many attempts into ONE sbatch script for a Slurm job array (no clock, no I/O).

Tasks may differ in command and environment (a sweep renders each task's own), so the script dispatches on
`SLURM_ARRAY_TASK_ID`: each branch exports what its task's environment adds to the variables every task
shares (those travel with sbatch, `--export`), enters the task's working directory and runs its command;
afterwards the shared tail writes the task's usage sample into the task's own job directory. Resources are
one set for the whole array (Slurm's rule), so the tasks must agree on them.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path

from frontdesk.backends.base import BackendJob
from frontdesk.backends.slurm import render
from frontdesk.backends.slurm.arrays import compress_indices
from frontdesk.backends.slurm.placement import GpuPlacement
from frontdesk.errors import SpecError

__all__ = ["ARRAY_DIR", "array_option", "common_env", "render_array_script", "resources_of", "task_output"]

ARRAY_DIR = "array"
"""Under the first task's job dir: the script and, per task, `<index>.out/.err` links to the task's files."""


def resources_of(job: BackendJob) -> tuple[object, ...]:
    """What must be equal across an array's tasks (one sbatch asks for one set of resources)."""
    return (job.cpus, job.memory_bytes, job.gpus, job.gpu_types, job.walltime_seconds, job.partition, job.qos)


def common_env(jobs: Sequence[BackendJob]) -> dict[str, str]:
    """The variables every task has with the same value: sbatch's environment for the whole array."""
    first = dict(jobs[0].env)
    for job in jobs[1:]:
        first = {k: v for k, v in first.items() if job.env.get(k) == v}
    return first


def array_option(jobs: Sequence[BackendJob], max_running: int | None) -> str:
    """`--array=0-9%2` for these tasks."""
    return "--array=" + compress_indices([_index(j) for j in jobs], max_running)


def task_output(array_dir: Path, index: int) -> tuple[Path, Path]:
    """The per-task names Slurm writes to (`%a` expanded): links to the task's own stdout/stderr."""
    return array_dir / f"{index}.out", array_dir / f"{index}.err"


def _index(job: BackendJob) -> int:
    index = job.array_index
    if index is None or index < 0:
        raise SpecError(f"job {job.job_id} has no array task index")
    return index


def _pattern_path(directory: Path, pattern: str) -> str:
    """`DIR/%a.out` for an #SBATCH line: the directory's own `%` escaped, the task pattern kept."""
    text = render._directive_path(directory).strip('"') + "/" + pattern
    return f'"{text}"' if any(c.isspace() for c in text) else text


def _branch(job: BackendJob, shared: Mapping[str, str], foreign: bool) -> list[str]:
    given = render._slurm_options(job)
    lines = [f"{_index(job)})", f"  _fd_usage={shlex.quote(str(job.job_dir / render.USAGE_FILE))}"]
    for key in sorted(job.env):
        if not render._ENV_NAME.match(key):
            raise SpecError(f"not an environment variable name: {key!r}")
        if key.startswith("SLURM_"):
            continue  # Slurm sets SLURM_ARRAY_TASK_ID and friends itself
        if key.startswith("FRONTDESK_") or shared.get(key) != job.env[key]:
            lines.append(f"  export {key}={shlex.quote(job.env[key])}")
    lines.append(f"  cd -- {shlex.quote(str(job.workdir))} || exit 1")
    argv = [*job.argv, *(given.args if given else [])]
    if foreign and job.script_text is not None:
        lines += ["  " + x for x in render._inline_script(job.script_text, argv, str(job.job_dir / "script"))]
    else:
        lines.append("  " + shlex.join(argv))
    lines.append("  ;;")
    return lines


def render_array_script(
    jobs: Sequence[BackendJob],
    array_dir: Path,
    *,
    default_partition: str | None = None,
    extra_directives: Sequence[str] = (),
    gpu: GpuPlacement | None = None,
    nice_shift: int = 0,
    foreign: bool = False,
) -> str:
    """The sbatch script of a whole array: one set of `#SBATCH` resources, one `case` branch per task."""
    if not jobs:
        raise SpecError("an array needs at least one task")
    first = jobs[0]
    if any(resources_of(j) != resources_of(first) for j in jobs[1:]):
        raise SpecError("the tasks of one Slurm array must ask for the same resources")
    given = render._slurm_options(first)
    lines = [
        "#!/bin/bash",
        f"# frontdesk array of {len(jobs)} tasks, first job {first.job_id} attempt {first.attempt} ({first.name}); "
        "generated, kept for provenance.",
    ]
    if given is None:
        lines.append(f"#SBATCH --job-name={first.key}")
    lines += render._resource_lines(first, given, default_partition, gpu, nice_shift)
    if given is None:
        where = first.workdir if foreign else array_dir
        name = f"{first.key}_%a" if foreign else "%a"
        lines += [
            f"#SBATCH --output={_pattern_path(where, name + '.out')}",
            f"#SBATCH --error={_pattern_path(where, name + '.err')}",
            f"#SBATCH --chdir={render._directive_path(first.workdir if foreign else array_dir, pattern=False)}",
        ]
    lines += [f"#SBATCH {d}" for d in extra_directives]
    shared = common_env(jobs)
    lines += ["", 'case "${SLURM_ARRAY_TASK_ID:-}" in']
    for job in sorted(jobs, key=_index):
        lines += _branch(job, shared, foreign)
    lines += [
        '*) echo "frontdesk: this array has no task ${SLURM_ARRAY_TASK_ID:-(none)}" >&2; exit 1 ;;',
        "esac",
        render._USAGE_TAIL.strip("\n").replace("{usage}", '"$_fd_usage"'),
    ]
    return "\n".join(lines) + "\n"
