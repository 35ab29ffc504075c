"""Pure rendering of one attempt into an sbatch script (no clock, no I/O).

The script carries every resource as an `#SBATCH` line, so the file kept in the job directory says
exactly what was asked of Slurm. The command runs in the foreground of the batch shell; afterwards the
shell writes its own usage sample (children's CPU time, the step cgroup's peak memory, exit status) to
`USAGE_FILE` in the job directory, for sites without Slurm accounting.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Sequence
from pathlib import Path

from frontdesk.backends.base import BackendJob
from frontdesk.errors import SpecError

__all__ = [
    "SCRIPT_FILE",
    "STDERR_FILE",
    "STDOUT_FILE",
    "USAGE_FILE",
    "format_time_limit",
    "render_script",
    "sbatch_argv",
]

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SCRIPT_FILE = "sbatch.sh"
STDOUT_FILE = "stdout"
STDERR_FILE = "stderr"
USAGE_FILE = "slurm-usage.txt"

_USAGE_TAIL = r"""
_fd_rc=$?
{
  echo "rc=$_fd_rc"
  echo "ended=$(date +%s)"
  echo "times:"
  times
  _fd_v1=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ {print $3}' /proc/self/cgroup 2>/dev/null)
  _fd_v2=$(awk -F: '$1 == "0" {print $3}' /proc/self/cgroup 2>/dev/null)
  case "$_fd_v1" in *job_*)  # only the job's own cgroup (Slurm's task/cgroup) says what the job used
    echo "peak_bytes=$(cat "/sys/fs/cgroup/memory$_fd_v1/memory.max_usage_in_bytes")" ;;
  *) case "$_fd_v2" in *job_*) echo "peak_bytes=$(cat "/sys/fs/cgroup$_fd_v2/memory.peak")" ;; esac ;;
  esac
} > {usage} 2>/dev/null
if [ "$_fd_rc" -gt 128 ] && [ "$_fd_rc" -lt 160 ]; then
  trap - "$((_fd_rc - 128))" 2>/dev/null
  kill -s "$((_fd_rc - 128))" $$
fi
exit "$_fd_rc"
"""


def format_time_limit(seconds: int) -> str:
    """Slurm's `D-HH:MM:SS`, rounded up to whole minutes (Slurm's own resolution)."""
    minutes = max(1, math.ceil(seconds / 60))
    days, rest = divmod(minutes, 24 * 60)
    hours, mins = divmod(rest, 60)
    return f"{days}-{hours:02d}:{mins:02d}:00"


def _directive_path(path: Path, pattern: bool = True) -> str:
    text = str(path)
    if any(c in text for c in '"\n\r'):
        raise SpecError(f"a job directory Slurm cannot name in #SBATCH lines: {text!r}")
    if pattern:
        text = text.replace("%", "%%")  # Slurm expands %j and friends in output file names
    return f'"{text}"' if any(c.isspace() for c in text) else text


def _gres(job: BackendJob) -> str | None:
    if job.gpus <= 0:
        return None
    if job.gpu_types:
        return f"gpu:{job.gpu_types[0]}:{job.gpus}"
    return f"gpu:{job.gpus}"


def render_script(
    job: BackendJob, *, default_partition: str | None = None, extra_directives: Sequence[str] = ()
) -> str:
    """The sbatch script for one attempt: `#SBATCH` resources, environment, the command, usage sampling."""
    out_dir = job.job_dir
    lines = [
        "#!/bin/bash",
        f"# frontdesk job {job.job_id} attempt {job.attempt} ({job.name}); generated, kept for provenance.",
        f"#SBATCH --job-name={job.key}",
        "#SBATCH --ntasks=1",
        f"#SBATCH --cpus-per-task={job.cpus}",
    ]
    partition = job.partition or default_partition
    if partition:
        lines.append(f"#SBATCH --partition={partition}")
    if job.memory_bytes:
        lines.append(f"#SBATCH --mem={max(1, math.ceil(job.memory_bytes / 2**20))}M")
    gres = _gres(job)
    if gres:
        lines.append(f"#SBATCH --gres={gres}")
    if job.walltime_seconds:
        lines.append(f"#SBATCH --time={format_time_limit(job.walltime_seconds)}")
    if job.qos:
        lines.append(f"#SBATCH --qos={job.qos}")
    if job.priority > 0:
        from frontdesk.policy.priority import slurm_nice

        lines.append(f"#SBATCH --nice={slurm_nice(job.priority)}")  # the policy's order, within the partition
    lines += [
        f"#SBATCH --output={_directive_path(out_dir / STDOUT_FILE)}",
        f"#SBATCH --error={_directive_path(out_dir / STDERR_FILE)}",
        f"#SBATCH --chdir={_directive_path(out_dir, pattern=False)}",
    ]
    lines += [f"#SBATCH {d}" for d in extra_directives]
    lines.append("")
    for key in sorted(job.env):
        if not _ENV_NAME.match(key):
            raise SpecError(f"not an environment variable name: {key!r}")
        lines.append(f"export {key}={shlex.quote(job.env[key])}")
    lines.append(f"cd -- {shlex.quote(str(job.workdir))} || exit 1")
    lines.append(shlex.join(job.argv))
    lines.append(_USAGE_TAIL.strip("\n").replace("{usage}", shlex.quote(str(out_dir / USAGE_FILE))))
    return "\n".join(lines) + "\n"


def sbatch_argv(script_path: Path, sbatch: str = "sbatch") -> list[str]:
    """The sbatch command line for a rendered script (`--parsable`: prints `id[;cluster]`)."""
    return [sbatch, "--parsable", str(script_path)]
