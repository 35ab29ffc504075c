"""`sbatch` through the gateway: every submission passes the guard with the script's real content.

The command line and the script's `#SBATCH` lines (the command line wins) are split with sbatch's own option
table (backends/slurm/options.py). The script is copied at submission and sent as the job's `script`, so the
guard, the failure memory and the report see what really runs; `--wrap` becomes the script sbatch would
write. Resources the policy reads (-p, -c, --mem, -t, GPUs) go into the spec; everything else sbatch knows
(-N, -n, -A, --qos, --array, --dependency, --hold...) travels in `spec.slurm.options` to the real sbatch on
the gateway, with the submitter's environment (`--export`). Nothing a user types bypasses the gateway:
an unknown option fails as sbatch fails; only --help/--version/--test-only (which submit nothing) reach
the real sbatch directly.
"""

from __future__ import annotations

import math
import os
import re
import shlex
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from frontdesk.backends.slurm.options import Kind, OptionError, SbatchOption, split_command_line
from frontdesk.durations import parse_slurm_clock
from frontdesk.jobs.state import JobState
from frontdesk.shims.common import exec_real

__all__ = ["SbatchError", "Submission", "build_spec", "main", "parse_directives", "slurm_memory", "slurm_time"]

SUBMIT_WINDOW = 20.0
"""Seconds the gateway has to accept a submission (FRONTDESK_SBATCH_SUBMIT_WINDOW); a hung gateway that wakes
later refuses it, so an agent that retried after the failure never gets a duplicate."""
CLIENT_TIMEOUT = 75.0
"""Longer than the window plus the backend's sbatch timeout: the answer of an accepted job arrives."""
_WRAP = "#!/bin/sh\n# This script was created by sbatch --wrap.\n\n{}\n"
_NOT_SCRIPT = (
    "sbatch: error: This does not look like a batch script.  The first\n"
    "sbatch: error: line must start with #! followed by the path to an interpreter.\n"
    "sbatch: error: For instance: #!/bin/sh\n"
)
_DOS = (
    "sbatch: error: Batch script contains DOS line breaks (\\r\\n)\n"
    "sbatch: error: instead of expected UNIX line breaks (\\n)."
)


class SbatchError(Exception):
    """A command line sbatch would refuse: the message sbatch prints and its exit status (1, 255 for options)."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Submission:
    """A parsed sbatch command line: the spec to submit and what the shim itself does after."""

    spec: dict[str, Any]
    parsable: bool = False
    quiet: bool = False
    wait: bool = False
    info: bool = False


def slurm_time(text: str) -> int:
    """Seconds from sbatch's --time: `M`, `M:S`, `H:M:S`, `D-H`, `D-H:M`, `D-H:M:S`."""
    return math.ceil(parse_slurm_clock(text))


def slurm_memory(text: str) -> int:
    """Bytes from sbatch's --mem (`4G`, `500M`, a bare number is megabytes)."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGT]?)B?", text.strip(), re.IGNORECASE)
    if not m:
        raise ValueError(text)
    unit = m.group(2).upper() or "M"
    return int(float(m.group(1)) * {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}[unit])


def parse_directives(text: str) -> list[str]:
    """The arguments of the leading `#SBATCH` lines of a batch script (as sbatch reads them)."""
    out: list[str] = []
    for i, line in enumerate(text.splitlines()):
        stripped = line.strip()
        if i == 0 and stripped.startswith("#!"):
            continue
        if stripped.startswith("#SBATCH"):
            out += shlex.split(stripped[len("#SBATCH") :].split(" #", 1)[0], comments=False)
        elif stripped and not stripped.startswith("#"):
            break
    return out


def _merge(*layers: list[tuple[SbatchOption, str | None]]) -> dict[str, str | None]:
    """Options by name; a later layer (the command line after the script) wins."""
    out: dict[str, str | None] = {}
    for layer in layers:
        for opt, value in layer:
            if opt.kind is Kind.REFUSED:
                raise SbatchError(f"sbatch: error: frontdesk: --{opt.name} is not accepted through the gateway")
            out[opt.name] = value
    return out


_INPUT_ENV = {
    "SBATCH_ACCOUNT": "account",
    "SBATCH_ARRAY_INX": "array",
    "SBATCH_CONSTRAINT": "constraint",
    "SBATCH_EXCLUSIVE": "exclusive",
    "SBATCH_EXPORT": "export",
    "SBATCH_GPUS": "gpus",
    "SBATCH_GRES": "gres",
    "SBATCH_HINT": "hint",
    "SBATCH_JOB_NAME": "job-name",
    "SBATCH_MEM_PER_CPU": "mem-per-cpu",
    "SBATCH_MEM_PER_NODE": "mem",
    "SBATCH_NO_REQUEUE": "no-requeue",
    "SBATCH_PARTITION": "partition",
    "SBATCH_QOS": "qos",
    "SBATCH_RESERVATION": "reservation",
    "SBATCH_TIMELIMIT": "time",
    "SBATCH_WAIT": "wait",
}
"""sbatch's input environment variables: they override the script's #SBATCH lines, the command line wins."""


def _from_environment(environ: Mapping[str, str]) -> list[tuple[SbatchOption, str | None]]:
    from frontdesk.backends.slurm.options import OPTIONS

    out: list[tuple[SbatchOption, str | None]] = []
    for var, name in _INPUT_ENV.items():
        if var in environ:
            opt = OPTIONS[name]
            out.append((opt, None if opt.value == "none" or not environ[var] else environ[var]))
    return out


def _gpus(opts: dict[str, str | None]) -> tuple[int, list[str]] | None:
    """(count, types) for a GPU-only --gres or --gpus; None when it is something else (passed through)."""
    if opts.get("gres"):
        items = str(opts["gres"]).split(",")
        if len(items) != 1 or not items[0].startswith("gpu"):
            return None
        parts = items[0].split(":")
        if parts[0] != "gpu" or len(parts) > 3:
            return None
        if len(parts) == 1:
            return 1, []
        if len(parts) == 2:
            return (int(parts[1]), []) if parts[1].isdigit() else (1, [parts[1]])
        return int(parts[2]), [parts[1]]
    if opts.get("gpus"):
        kind, _, count = str(opts["gpus"]).rpartition(":")
        return int(count), [kind] if kind else []
    return 0, []


def _resources(opts: dict[str, str | None], passthrough: list[str]) -> dict[str, Any]:
    res: dict[str, Any] = {}
    try:
        if opts.get("cpus-per-task"):
            res["cpus"] = int(str(opts["cpus-per-task"]))
        if opts.get("mem"):
            mem = slurm_memory(str(opts["mem"]))
            if mem:
                res["memory"] = mem
            else:
                passthrough.append("--mem=0")  # all of each node's memory
        if opts.get("time"):
            if str(opts["time"]).lower() in ("unlimited", "infinite"):
                passthrough.append(f"--time={opts['time']}")
            else:
                res["walltime"] = slurm_time(str(opts["time"]))
        gpus = _gpus(opts)
    except ValueError as exc:
        raise SbatchError(f"sbatch: error: Invalid value: {exc}") from None
    if gpus is None:
        passthrough.append(f"--gres={opts['gres']}")
    elif gpus[0]:
        res["gpus"] = gpus[0]
        if gpus[1]:
            res["gpu"] = {"type": gpus[1]}
    return res


def _script(opts: dict[str, str | None], rest: list[str], cwd: str, stdin: Any) -> tuple[str, str, list[str]]:
    """(script text, default job name, script args)."""
    if opts.get("wrap") is not None:
        if rest:
            raise SbatchError("sbatch: error: Script arguments not permitted with --wrap option")
        return _WRAP.format(opts["wrap"]), "wrap", []
    if not rest:  # the bytes as given: text mode would turn \r\n (and a lone \r) into \n
        raw = stdin.buffer.read(MAX_SCRIPT_BYTES + 1) if hasattr(stdin, "buffer") else stdin.read(MAX_SCRIPT_BYTES + 1)
        text = raw.decode("utf-8", "surrogateescape") if isinstance(raw, bytes) else raw
        return _checked(text), "sbatch", []
    path = os.path.join(cwd, rest[0])
    try:
        with open(path, encoding="utf-8", errors="surrogateescape", newline="") as fh:
            text = fh.read(MAX_SCRIPT_BYTES + 1)  # bounded: `sbatch /dev/zero` filled memory
    except OSError:
        raise SbatchError(f"sbatch: error: Unable to open file {rest[0]}") from None
    return _checked(text), os.path.basename(rest[0]), rest[1:]


MAX_SCRIPT_BYTES = 16 << 20
"""The most of a batch script the shim reads (Slurm's own default max_script_size is 4 MB)."""


def _checked(text: str) -> str:
    """A script file or standard input refused as sbatch refuses it (never a --wrap, which sbatch writes)."""
    if not text:
        raise SbatchError("sbatch: error: Batch script is empty!")
    if len(text) > MAX_SCRIPT_BYTES:
        raise SbatchError(f"sbatch: error: frontdesk: a batch script over {MAX_SCRIPT_BYTES >> 20} MiB")
    if text.startswith("#!") and "\r\n" in text:
        raise SbatchError(_DOS)
    return text


def build_spec(argv: Sequence[str], cwd: str, stdin: Any = None) -> Submission:
    """The submission for one sbatch command line; raises SbatchError with sbatch's message."""
    try:
        cli, rest = split_command_line(argv)
    except OptionError as exc:
        raise SbatchError(f'sbatch: {exc}\nTry "sbatch --help" for more information', status=255) from None
    first = _merge(cli)
    if any(opt.kind is Kind.INFO for opt, _ in cli):
        return Submission(spec={}, info=True)
    text, default_name, args = _script(first, rest, cwd, stdin or sys.stdin)
    if not text.startswith("#!"):
        raise SbatchError(_NOT_SCRIPT.rstrip("\n"))
    try:
        from_script, _ = split_command_line(parse_directives(text))
    except (OptionError, ValueError) as exc:
        raise SbatchError(f"sbatch: error: in the script's #SBATCH lines: {exc}") from None
    opts = _merge(from_script, _from_environment(os.environ), cli)
    passthrough = [
        f"--{name}" + ("" if value is None else f"={value}")
        for (name, value) in opts.items()
        if _kind(name) is Kind.PASS and name != "array"
    ]
    name = opts.get("job-name") or default_name
    slurm: dict[str, Any] = {"options": passthrough, "job_name": name, "args": args}
    for key in ("output", "error", "export"):
        if opts.get(key):
            slurm[key] = opts[key]
    spec: dict[str, Any] = {
        "script": text,
        "name": re.sub(r"[^A-Za-z0-9_.@+-]", "_", name)[:128] or "sbatch",
        "workdir": os.path.join(cwd, str(opts["chdir"])) if opts.get("chdir") else cwd,
        "slurm": slurm,
    }
    resources = _resources(opts, passthrough)
    if resources:
        spec["resources"] = resources
    if opts.get("partition"):
        spec["pool"] = opts["partition"]
    if "array" in opts:
        spec["array"] = _array(opts["array"])
    return Submission(spec=spec, parsable="parsable" in opts, quiet="quiet" in opts, wait="wait" in opts)


def _array(value: str | None) -> str:
    """`--array`/`-a`/SBATCH_ARRAY_INX as sbatch reads it (`0-15:4%2`), for the spec's `array` (one frontdesk
    array: tracked task by task, one report, and on Slurm still ONE real `sbatch --array`)."""
    from frontdesk.spec.arrays import parse_array

    try:
        parse_array(value or "")
    except ValueError as exc:
        raise SbatchError(f"sbatch: error: Invalid job array specification: {exc}") from None
    return str(value)


def _kind(name: str) -> Kind:
    from frontdesk.backends.slurm.options import OPTIONS

    return OPTIONS[name].kind


def _context() -> dict[str, Any]:
    from frontdesk.agents.detect import detect_context

    # no "env": Client.submit captures the submitter's whole environment (less secrets: jobenv.capture_env)
    return {**detect_context(), "source": "shim", "cwd": os.getcwd()}


def _slurm_id(client: Any, record: dict[str, Any]) -> str | None:
    """The Slurm id of a just-submitted job (a policy queue may hand it to Slurm a moment later); of an array,
    the array's own (`844` of its tasks' `844_0`...), from its first task."""
    if record.get("array"):
        first = (record["array"].get("task_ids") or [None])[0]
        if first is None:
            return None
        task_id = _slurm_id(client, client.job(first))
        return task_id.split("_", 1)[0] if task_id else None
    deadline = time.monotonic() + 10
    while not record.get("backend_id") and time.monotonic() < deadline:
        if record.get("state") not in (JobState.PENDING, None):
            break
        time.sleep(0.1)
        record = client.job(record["id"])
    return str(record["backend_id"]) if record.get("backend_id") else None


def _submit(sub: Submission) -> int:
    from frontdesk.client import Client
    from frontdesk.errors import FrontdeskError

    window = float(os.environ.get("FRONTDESK_SBATCH_SUBMIT_WINDOW") or SUBMIT_WINDOW)
    sub.spec["slurm"]["submit_by"] = time.time() + window
    client = Client(timeout=CLIENT_TIMEOUT)
    try:
        record = client.submit(spec=sub.spec, context=_context())
        for warning in record.get("warnings") or []:
            sys.stderr.write(f"sbatch: frontdesk: {warning}\n")
        slurm_id = _slurm_id(client, record)
        if slurm_id is None:
            job = client.job(record["id"])
            reason = job.get("reason") or job.get("state")
            sys.stderr.write(f"sbatch: error: Batch job submission failed: {reason}\n")
            if job.get("state") == JobState.PENDING:  # never handed to Slurm: do not let it run later
                client.cancel(record["id"])
            return 1
        if not sub.quiet:
            sys.stdout.write(f"{slurm_id}\n" if sub.parsable else f"Submitted batch job {slurm_id}\n")
            sys.stdout.flush()
        if not sub.wait:
            return 0
        client.wait([record["id"]], mode="all", timeout=None)
        job = client.job(record["id"])
    except FrontdeskError as exc:
        sys.stderr.write(f"sbatch: error: frontdesk: {exc.message}\n")
        return exc.exit_code
    if job["state"] == JobState.COMPLETED:
        return 0
    return int(job.get("exit_code") or 1)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the shim; sbatch's exit status (with --wait, the job's)."""
    args_in = list(sys.argv[1:] if argv is None else argv)
    try:
        sub = build_spec(args_in, os.getcwd())
    except SbatchError as exc:
        sys.stderr.write(f"{exc}\n")
        return exc.status
    if sub.info:
        exec_real("sbatch", args_in, "submits nothing")
    return _submit(sub)
