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
from frontdesk.backends.slurm.placement import GpuPlacement
from frontdesk.errors import SpecError
from frontdesk.spec.model import SlurmOptions

__all__ = [
    "SCRIPT_FILE",
    "STDERR_FILE",
    "STDOUT_FILE",
    "USAGE_FILE",
    "command_line",
    "format_time_limit",
    "nice_value",
    "render_script",
    "sbatch_argv",
    "slurm_nice",
]

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SCRIPT_FILE = "sbatch.sh"
STDOUT_FILE = "stdout"
STDERR_FILE = "stderr"
USAGE_FILE = "slurm-usage.txt"
_ARRAY_VARS = frozenset({"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_JOB_ID"})

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
} 2>/dev/null > {usage}  # no noise where the job cannot write there (run as its user)
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


def _slurm_options(job: BackendJob) -> SlurmOptions | None:
    value = job.extra.get("slurm")
    return value if isinstance(value, SlurmOptions) else None


def nice_value(priority: int, shift: int = 0) -> int:
    """`--nice` for a policy priority: 0..9999 (lower only) unprivileged; centred on 0 when `shift` is 5000.

    A gateway that may set negative nice (root, Slurm operator) centres its range, so a typical
    frontdesk job ranks with direct submissions and an urgent one above them, not always below."""
    return slurm_nice(priority) - shift


def slurm_nice(priority: int) -> int:
    """The `sbatch --nice` value for an entry priority: 0 for the top level, larger further down.

    Unprivileged users may only lower their priority in Slurm, so frontdesk's order is expressed as
    non-negative nice values; partition and QOS carry the coarse decisions.
    """
    return max(0, 9999 - priority)


def _resource_lines(
    job: BackendJob,
    given: SlurmOptions | None,
    default_partition: str | None,
    gpu: GpuPlacement | None,
    nice_shift: int = 0,
) -> list[str]:
    lines = []
    if given is None:
        lines += ["#SBATCH --ntasks=1", f"#SBATCH --cpus-per-task={job.cpus}"]
    elif job.cpus > 1:
        lines.append(f"#SBATCH --cpus-per-task={job.cpus}")
    partition = gpu.partition if gpu is not None else job.partition or default_partition
    if partition:
        lines.append(f"#SBATCH --partition={partition}")
    per_unit = given is not None and any(
        o.startswith(("--mem-per-cpu", "--mem-per-gpu", "--mem=")) for o in given.options
    )
    if job.memory_bytes and not per_unit:
        lines.append(f"#SBATCH --mem={max(1, math.ceil(job.memory_bytes / 2**20))}M")
    gres = gpu.gres if gpu is not None else _gres(job)
    if gres:
        lines.append(f"#SBATCH --gres={gres}")
    if gpu is not None and gpu.exclude:
        lines.append(f"#SBATCH --exclude={','.join(gpu.exclude)}")  # GPU nodes of types the job does not accept
    if job.walltime_seconds:
        lines.append(f"#SBATCH --time={format_time_limit(job.walltime_seconds)}")
    if job.qos:
        lines.append(f"#SBATCH --qos={job.qos}")
    if job.priority > 0 and not (given and any(o.startswith("--nice") for o in given.options)):
        lines.append(f"#SBATCH --nice={nice_value(job.priority, nice_shift)}")  # the policy's order
    return lines


def render_script(
    job: BackendJob,
    *,
    default_partition: str | None = None,
    extra_directives: Sequence[str] = (),
    gpu: GpuPlacement | None = None,
    nice_shift: int = 0,
    foreign: bool = False,
) -> str:
    """The sbatch script for one attempt: `#SBATCH` resources, the command, usage sampling.

    The job's environment is not written here: it is the environment sbatch runs with (`--export`).
    A job from the sbatch shim keeps the user's name, files and options, given on sbatch's command line
    (`command_line`), so no user text is ever parsed as an `#SBATCH` line. A `foreign` job (run as its
    submitter by a root gateway) cannot reach the gateway's 0700 job directory: its script travels inside
    this one and its output goes to its working directory."""
    out_dir = job.job_dir
    given = _slurm_options(job)
    lines = [
        "#!/bin/bash",
        f"# frontdesk job {job.job_id} attempt {job.attempt} ({job.name}); generated, kept for provenance.",
    ]
    if given is None:
        lines.append(f"#SBATCH --job-name={job.key}")
    lines += _resource_lines(job, given, default_partition, gpu, nice_shift)
    if given is None:
        out, err = (out_dir / STDOUT_FILE, out_dir / STDERR_FILE)
        if foreign:
            out, err = (job.workdir / f"{job.key}.out", job.workdir / f"{job.key}.err")
        lines += [
            f"#SBATCH --output={_directive_path(out)}",
            f"#SBATCH --error={_directive_path(err)}",
            f"#SBATCH --chdir={_directive_path(job.workdir if foreign else out_dir, pattern=False)}",
        ]
    lines += [f"#SBATCH {d}" for d in extra_directives]
    lines.append("")
    for key in sorted(job.env):
        if not _ENV_NAME.match(key):
            raise SpecError(f"not an environment variable name: {key!r}")
        if key.startswith("FRONTDESK_") or (key in _ARRAY_VARS and job.array_index is not None):
            # FRONTDESK_* are kept even under --export=NONE; an array task submitted on its own (a retry, a
            # task that waited on its own dependency) still sees its index where a script reads it
            lines.append(f"export {key}={shlex.quote(job.env[key])}")
    lines.append(f"cd -- {shlex.quote(str(job.workdir))} || exit 1")
    argv = [*job.argv, *(given.args if given else [])]
    if foreign and job.script_text is not None:
        lines += _inline_script(job.script_text, argv, str(out_dir / "script"))
    else:
        lines.append(shlex.join(argv))
    lines.append(_USAGE_TAIL.strip("\n").replace("{usage}", shlex.quote(str(out_dir / USAGE_FILE))))
    return "\n".join(lines) + "\n"


def _inline_script(text: str, argv: list[str], copy: str) -> list[str]:
    """The job's script written by the job itself (as its user) from a here-document, then run."""
    import hashlib

    end = "FRONTDESK_SCRIPT_" + hashlib.sha1(text.encode(errors="surrogateescape")).hexdigest()[:16]
    body = text if text.endswith("\n") else text + "\n"
    run = ['"$_fd_script"' if a == copy else shlex.quote(a) for a in argv]
    if run and run[0] == '"$_fd_script"' and not text.startswith("#!"):
        run.insert(0, "/bin/bash")
    return [
        '_fd_script=$(mktemp "${TMPDIR:-/tmp}/frontdesk-script.XXXXXX") || exit 1',
        f"cat > \"$_fd_script\" <<'{end}'",
        body + end,
        'chmod 700 "$_fd_script"',
        " ".join(run) + '; _fd_keep=$?; rm -f -- "$_fd_script"; (exit $_fd_keep)',
    ]


def command_line(job: BackendJob, tag: str, array: bool = False) -> list[str]:
    """sbatch options for the command line: the sbatch shim's (name, files, --export, pass-through options).

    `tag` ends --comment (after the user's own, if any) so a restarted gateway finds an sbatch's job that never
    answered (recovery.py: only by a launch's nonce);
    an `array`'s default output is sbatch's `slurm-%A_%a.out`."""
    given = _slurm_options(job)
    if given is None:
        return [f"--export={_export(None)}", f"--comment={tag}"]
    array = array or any(o.startswith("--array") for o in given.options)
    out = [
        f"--job-name={given.job_name or job.name}",
        f"--output={given.output or ('slurm-%A_%a.out' if array else 'slurm-%j.out')}",
        f"--chdir={job.workdir}",
        f"--export={_export(given.export)}",
    ]
    if given.error:
        out.append(f"--error={given.error}")
    return out + _tagged(list(given.options), tag)


def _tagged(options: list[str], tag: str) -> list[str]:
    """The options with frontdesk's tag last in --comment (after the user's own comment, if any): a restarted
    gateway finds the attempt by it, and only the last word counts, so a comment cannot pose as a tag."""
    out = list(options)
    for i, opt in enumerate(out):
        if opt.startswith("--comment="):
            out[i] = f"{opt} {tag}"
            return out
        if opt == "--comment" and i + 1 < len(out):
            out[i + 1] = f"{out[i + 1]} {tag}"
            return out
    return [f"--comment={tag}", *out]


def _export(value: str | None) -> str:
    return value or "ALL"


def sbatch_argv(script_path: Path | None, sbatch: str = "sbatch", options: Sequence[str] = ()) -> list[str]:
    """The sbatch command line for a rendered script (`--parsable`: prints `id[;cluster]`); None: sbatch reads
    it on its stdin (run as a submitter who cannot read the gateway's 0700 job directory)."""
    return [sbatch, "--parsable", *options, *([] if script_path is None else [str(script_path)])]
