"""`sbatch` through the gateway, so guardrails, memory and policy see every submission.

Reads the script's `#SBATCH` lines and the command line (which wins): -p, -c, --mem, --mem-per-cpu,
-t, --gres, -G/--gpus, -J, -D, --wrap, --export, -n 1, -N 1, --wait, --parsable. Prints Slurm's job id,
as sbatch does. Any other flag (-o/-e, -A, -d, arrays...) sends the whole line to the real sbatch.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from frontdesk.shims.common import ShimArgs, exec_real
from frontdesk.shims.parser import ShimParser

__all__ = ["main", "build_spec", "parse_directives", "slurm_memory", "slurm_time"]


def slurm_time(text: str) -> int:
    """Seconds from sbatch's --time: `M`, `M:S`, `H:M:S`, `D-H`, `D-H:M`, `D-H:M:S`."""
    text = text.strip()
    days = 0
    if "-" in text:
        d, _, text = text.partition("-")
        days = int(d)
        parts = [int(p) for p in text.split(":")]
        parts += [0] * (3 - len(parts))
        return days * 86400 + parts[0] * 3600 + parts[1] * 60 + parts[2]
    nums = [int(p) for p in text.split(":")]
    if len(nums) == 1:
        return nums[0] * 60
    if len(nums) == 2:
        return nums[0] * 60 + nums[1]
    if len(nums) == 3:
        return nums[0] * 3600 + nums[1] * 60 + nums[2]
    raise ValueError(text)


def slurm_memory(text: str) -> int:
    """Bytes from sbatch's --mem (`4G`, `500M`, a bare number is megabytes)."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGT]?)B?", text.strip(), re.IGNORECASE)
    if not m:
        raise ValueError(text)
    unit = m.group(2).upper() or "M"
    return int(float(m.group(1)) * {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}[unit])


def _parser() -> argparse.ArgumentParser:
    p = ShimParser(prog="sbatch", add_help=False, allow_abbrev=False)
    p.add_argument("-p", "--partition")
    p.add_argument("-c", "--cpus-per-task", type=int)
    p.add_argument("--mem")
    p.add_argument("--mem-per-cpu")
    p.add_argument("-t", "--time")
    p.add_argument("--gres")
    p.add_argument("-G", "--gpus")
    p.add_argument("-J", "--job-name")
    p.add_argument("-D", "--chdir")
    p.add_argument("--wrap")
    p.add_argument("-o", "--output")
    p.add_argument("-e", "--error")
    p.add_argument("--export")
    p.add_argument("-d", "--dependency")
    p.add_argument("-n", "--ntasks", type=int)
    p.add_argument("-N", "--nodes")
    p.add_argument("-W", "--wait", action="store_true", default=None)
    p.add_argument("--parsable", action="store_true", default=None)
    p.add_argument("-Q", "--quiet", action="store_true", default=None)
    return p


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


def _gpus(ns: argparse.Namespace) -> tuple[int, str | None]:
    if ns.gres:
        items = [g for g in ns.gres.split(",") if g.startswith("gpu")]
        if len(items) != len(ns.gres.split(",")) or len(items) != 1:
            raise ShimArgs(f"--gres={ns.gres}")
        parts = items[0].split(":")
        if len(parts) == 1:
            return 1, None
        if len(parts) == 2:
            return (int(parts[1]), None) if parts[1].isdigit() else (1, parts[1])
        return int(parts[2]), parts[1]
    if ns.gpus:
        kind, _, count = ns.gpus.rpartition(":")
        return int(count), kind or None
    return 0, None


def _env(export: str | None) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in (export or "").split(","):
        item = item.strip()
        if not item or item in ("ALL", "NONE", "NIL"):
            continue
        key, sep, value = item.partition("=")
        if sep:
            env[key] = value
        elif key in os.environ:
            env[key] = os.environ[key]
    return env


_VALUED = {
    "-p",
    "--partition",
    "-c",
    "--cpus-per-task",
    "--mem",
    "--mem-per-cpu",
    "-t",
    "--time",
    "--gres",
    "-G",
    "--gpus",
    "-J",
    "--job-name",
    "-D",
    "--chdir",
    "--wrap",
    "--export",
    "-n",
    "--ntasks",
    "-N",
    "--nodes",
    "-o",
    "--output",
    "-e",
    "--error",
    "-d",
    "--dependency",
}
_TEE = (
    "o=$0 e=$1; shift; o=${o//__FD_JOB__/${SLURM_JOB_ID:-$FRONTDESK_JOB_ID}}; "
    "e=${e//__FD_JOB__/${SLURM_JOB_ID:-$FRONTDESK_JOB_ID}}; "
    'if [ "$o" = "$e" ]; then exec > >(tee -a -- "$o") 2>&1; '
    'else exec > >(tee -a -- "$o") 2> >(tee -a -- "$e" >&2); fi; '
    '"$@"; rc=$?; exec >&- 2>&-; wait; exit $rc'
)
"""Copies the job's output to sbatch's files (slurm-%j.out by default) as well as to the gateway's logs."""


def _pattern(path: str, name: str, user: str) -> str:
    """Slurm's file name pattern with %x, %u, %% filled in and %j left for the job to fill."""
    out, i = [], 0
    while i < len(path):
        if path[i] == "%" and i + 1 < len(path):
            code = path[i + 1]
            fill = {"j": "__FD_JOB__", "A": "__FD_JOB__", "x": name, "u": user, "%": "%"}
            out.append(fill.get(code, "%" + code))
            i += 2
        else:
            out.append(path[i])
            i += 1
    return "".join(out)


def _split(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """(sbatch's options, [script, script args...]): everything after the script belongs to it."""
    i = 0
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("-") or arg == "-":
            break
        if arg in _VALUED:
            i += 1
        i += 1
    return list(argv[:i]), list(argv[i:])


def _dependencies(text: str, resolve: Callable[[str], int | None]) -> tuple[list[int], str]:
    """Gateway ids and fail_action for `afterok:1:2` / `afterany:3`; jobs the gateway did not submit
    (or other dependency kinds) cannot be expressed."""
    kinds = set()
    ids: list[int] = []
    for part in text.split(","):
        kind, _, rest = part.partition(":")
        if kind not in ("afterok", "afterany") or not rest or "?" in part:
            raise ShimArgs(f"--dependency={text}")
        kinds.add(kind)
        for slurm_id in rest.split(":"):
            gw_id = resolve(slurm_id) if slurm_id.isdigit() else None
            if gw_id is None:
                raise ShimArgs(f"dependency on {slurm_id}, a job the gateway did not submit")
            ids.append(gw_id)
    if len(kinds) != 1:
        raise ShimArgs(f"--dependency={text}")
    return ids, "abort" if kinds == {"afterok"} else "continue"


Resolver = Callable[[str], int | None]


def build_spec(
    argv: Sequence[str], cwd: str, read: Any = None, resolve: Resolver | None = None
) -> tuple[dict[str, Any], argparse.Namespace]:
    """(job spec, parsed flags) for an sbatch command line; raises ShimArgs for what it cannot express.

    `resolve` maps a Slurm job id to the gateway's id (for --dependency)."""
    parser = _parser()
    options, rest = _split(argv)
    ns = parser.parse_args(options)
    spec: dict[str, Any] = {}
    if ns.wrap is not None:
        if rest:
            raise ShimArgs("--wrap with a script")
        spec["command"] = ["/bin/sh", "-c", ns.wrap]
        default_name = "wrap"
    else:
        if not rest:
            raise ShimArgs("script on standard input")
        path = os.path.join(cwd, rest[0])
        text = (read or (lambda p: open(p, encoding="utf-8").read()))(path)
        directives = parse_directives(text)
        if directives:
            from_script, extra = parser.parse_known_args(directives)
            if extra:
                raise ShimArgs(f"#SBATCH {extra[0]}")
            ns = parser.parse_args(options, namespace=from_script)
        spec["command"] = ["/bin/bash", os.path.abspath(path), *rest[1:]]
        default_name = os.path.basename(rest[0])
    user = os.environ.get("USER") or str(os.getuid())
    out = _pattern(ns.output or "slurm-%j.out", ns.job_name or default_name, user)
    err = _pattern(ns.error, ns.job_name or default_name, user) if ns.error else out
    spec["command"] = ["/bin/bash", "-c", _TEE, out, err, *spec["command"]]
    if (ns.ntasks or 1) != 1 or (ns.nodes or "1") not in ("1", "1-1"):
        raise ShimArgs("more than one task or node")
    name = re.sub(r"[^A-Za-z0-9_.@+-]", "_", ns.job_name or default_name)[:128]
    spec["name"] = name
    spec["workdir"] = os.path.join(cwd, ns.chdir) if ns.chdir else cwd
    resources: dict[str, Any] = {}
    if ns.cpus_per_task:
        resources["cpus"] = ns.cpus_per_task
    try:
        if ns.mem:
            resources["memory"] = slurm_memory(ns.mem)
        elif ns.mem_per_cpu:
            resources["memory"] = slurm_memory(ns.mem_per_cpu) * (ns.cpus_per_task or 1)
        if ns.time:
            resources["walltime"] = slurm_time(ns.time)
        gpus, gpu_type = _gpus(ns)
    except ValueError as exc:
        raise ShimArgs(f"cannot read {exc}") from None
    if gpus:
        resources["gpus"] = gpus
        if gpu_type:
            resources["gpu"] = {"type": [gpu_type]}
    if resources:
        spec["resources"] = resources
    if ns.partition:
        spec["pool"] = ns.partition
    env = _env(ns.export)
    if env:
        spec["env"] = env
    if ns.dependency:
        spec["depends_on"], spec["fail_action"] = _dependencies(ns.dependency, resolve or (lambda _: None))
    return spec, ns


def _slurm_id(client: Any, record: dict[str, Any]) -> str:
    deadline = time.monotonic() + 10
    while not record.get("backend_id") and time.monotonic() < deadline:
        if record.get("state") not in ("PENDING", None):
            break
        time.sleep(0.1)
        record = client.job(record["id"])
    return str(record.get("backend_id") or f"fd{record['id']}")


def _resolver() -> Callable[[str], int | None]:
    owned: dict[str, int] | None = None

    def resolve(slurm_id: str) -> int | None:
        nonlocal owned
        if owned is None:
            from frontdesk.errors import FrontdeskError
            from frontdesk.shims.common import fetch_view

            try:
                owned = {str(k): int(v) for k, v in fetch_view().get("frontdesk", {}).items()}
            except FrontdeskError:
                owned = {}
        return owned.get(slurm_id)

    return resolve


def main(argv: Sequence[str] | None = None) -> int:
    """Run the shim; sbatch's exit status (with --wait, the job's)."""
    args_in = list(sys.argv[1:] if argv is None else argv)
    try:
        spec, ns = build_spec(args_in, os.getcwd(), resolve=_resolver())
    except ShimArgs as exc:
        exec_real("sbatch", args_in, str(exc))
    except OSError as exc:
        sys.stderr.write(f"sbatch: error: Unable to open file {exc.filename}\n")
        return 1
    from frontdesk.agents.detect import detect_context
    from frontdesk.client import Client
    from frontdesk.errors import FrontdeskError

    client = Client()
    context = {**detect_context(), "source": "shim"}
    try:
        record = client.submit(spec=spec, context=context)
        for warning in record.get("warnings") or []:
            sys.stderr.write(f"sbatch: frontdesk: {warning}\n")
        slurm_id = _slurm_id(client, record)
        if not ns.quiet:
            sys.stdout.write(f"{slurm_id}\n" if ns.parsable else f"Submitted batch job {slurm_id}\n")
            sys.stdout.flush()
        if not ns.wait:
            return 0
        client.wait([record["id"]], mode="all", timeout=None)
        job = client.job(record["id"])
    except FrontdeskError as exc:
        sys.stderr.write(f"sbatch: error: frontdesk: {exc.message}\n")
        return exc.exit_code
    if job["state"] == "COMPLETED":
        return 0
    return int(job.get("exit_code") or 1)
