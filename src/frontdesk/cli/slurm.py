"""`frontdesk notify` (Slurm's EpilogSlurmctld → the gateway) and `frontdesk shim install DIR`.

`notify` runs on the Slurm controller for every job: it must be quick and must never fail the job, so it
tries each target once with a short timeout and the epilog wrapper ignores its exit status.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from frontdesk.cli.output import emit

__all__ = ["register", "SHIMS", "install_shims", "notify_targets"]

SHIMS = ("squeue", "sacct", "sbatch", "scancel")
_INFO_ENV = (
    "SLURM_ARRAY_JOB_ID",
    "SLURM_ARRAY_TASK_ID",
    "SLURM_JOB_EXIT_CODE2",
    "SLURM_JOB_EXIT_CODE",
    "SLURM_JOB_DERIVED_EC",
    "SLURM_JOB_USER",
    "SLURM_JOB_UID",
    "SLURM_JOB_PARTITION",
    "SLURM_JOB_NODELIST",
    "SLURM_JOB_NAME",
    "SLURM_SCRIPT_CONTEXT",
)
_SHIM_TEMPLATE = """#!{python}
# frontdesk shim for `{name}`: answers from the gateway's cached view / submits through the gateway.
# Written by `frontdesk shim install`; put this directory first on an agent's PATH.
import sys
from frontdesk.shims.{name} import main
sys.exit(main())
"""


def register(sub: Any) -> None:
    """Add `notify` and `shim` to the CLI."""
    p = sub.add_parser("notify", help="tell the gateway Slurm jobs changed (EpilogSlurmctld entry point)")
    p.add_argument("ids", nargs="*", help="Slurm job ids (default: $SLURM_JOB_ID)")
    p.add_argument("--backend", default="slurm")
    p.add_argument("--socket", action="append", default=[], help="a gateway socket (repeatable)")
    p.add_argument("--targets-dir", help="a directory of files each naming a gateway socket (deprecated)")
    p.add_argument("--timeout", type=float, default=2.0, help="seconds per gateway (default 2)")
    p.add_argument("--quiet", action="store_true", help="print nothing on success")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_notify)

    s = sub.add_parser("shim", help="the polling shield: drop-in squeue/sacct/sbatch/scancel")
    ssub = s.add_subparsers(dest="shim_command", metavar="SUBCOMMAND")
    i = ssub.add_parser("install", help="write the shims into DIR (put DIR first on the agent's PATH)")
    i.add_argument("dir")
    i.add_argument("--json", action="store_true")
    i.add_argument("--fs", action="store_true", help="also grep/rg/find/du wrappers: recursive work via frontdesk fs")
    i.set_defaults(func=_install)


def notify_targets(sockets: list[str], targets_dir: str | None) -> list[str]:
    """Gateway sockets to tell: explicit ones, every file in targets_dir, else the environment's."""
    out = list(sockets)
    if targets_dir and os.path.isdir(targets_dir):
        for entry in sorted(os.listdir(targets_dir)):
            try:
                text = Path(targets_dir, entry).read_text().strip()
            except OSError:
                continue
            if text and text not in out:
                out.append(text)
    if not out and not targets_dir:
        from frontdesk.paths import socket_path_from_env

        out.append(str(socket_path_from_env()))
    return out


def _epilog_ids(environ: dict[str, str] | os._Environ[str]) -> list[str]:
    """The ended job's ids as the gateway knows them: `844_3` for an array task (EpilogSlurmctld sets
    SLURM_ARRAY_JOB_ID/SLURM_ARRAY_TASK_ID), then Slurm's own id of the job."""
    ids = [environ["SLURM_JOB_ID"]] if environ.get("SLURM_JOB_ID") else []
    array, task = environ.get("SLURM_ARRAY_JOB_ID", ""), environ.get("SLURM_ARRAY_TASK_ID", "")
    if array.isdigit() and task.isdigit():
        ids.insert(0, f"{array}_{task}")
    return ids


def _notify(args: argparse.Namespace) -> int:
    from frontdesk.client import Client
    from frontdesk.errors import FrontdeskError

    ids = list(args.ids) or _epilog_ids(os.environ)
    info = {k: os.environ[k] for k in _INFO_ENV if k in os.environ}
    body = {"backend": args.backend, "ids": ids, "info": info}
    if args.targets_dir and not args.quiet:  # kept for sites without a facility gateway (docs/slurm.md, "Push")
        print(
            "frontdesk: --targets-dir is deprecated: notify the facility gateway (--socket PATH) and let users'"
            " gateways subscribe to it",
            file=sys.stderr,
        )
    results = []
    for target in notify_targets(args.socket, args.targets_dir):
        if not target.startswith("http") and not os.path.exists(target):
            results.append({"target": target, "ok": False, "error": "no such socket"})
            continue
        client = Client(
            socket_path=None if target.startswith("http") else target,
            url=target if target.startswith("http") else None,
            timeout=args.timeout,
        )
        try:
            answer = client.request("POST", "/v1/notify", body)
            results.append({"target": target, "ok": True, "answer": answer})
        except FrontdeskError as exc:
            results.append({"target": target, "ok": False, "error": exc.message})
    failed = [r for r in results if not r["ok"]]
    data = {"ids": ids, "targets": results}
    if args.json or not args.quiet or failed:
        emit(
            args.json,
            data,
            lambda: (
                "\n".join(f"{r['target']}: {'ok' if r['ok'] else r['error']}" for r in results)
                or "no gateway to notify"
            ),
        )
    if results and len(failed) == len(results):
        return 69
    return 0


def install_shims(directory: Path, python: str | None = None, fast: bool = True) -> list[Path]:
    """Write the four shims into `directory` (made if missing); returns their paths.

    With fast=True `squeue` is the `sh` client of the gateway's rendered files, backed by the socket-only
    client `directory/.full/squeue-socket`, backed by the full shims in `directory/.full` (shims/scripts.py)."""
    import shlex

    from frontdesk.backends.slurm.views import MAX_NAME
    from frontdesk.paths import socket_path_from_env
    from frontdesk.shims.scripts import SOCKET_SQUEUE, VIEW_ENV, VIEW_SQUEUE

    python = python or sys.executable
    full_dir = directory / ".full"
    full_dir.mkdir(parents=True, exist_ok=True)
    for name in SHIMS:
        _write(full_dir / name, _SHIM_TEMPLATE.format(python=python, name=name))
    written = []
    for name in SHIMS:
        text = _SHIM_TEMPLATE.format(python=python, name=name)
        if name == "squeue" and fast:
            socket = str(socket_path_from_env())
            client = _write(
                full_dir / "squeue-socket",
                SOCKET_SQUEUE.format(
                    fast_python=_fast_python(python),
                    python=python,
                    full=str(full_dir / name),
                    shim_dir_b=os.fsencode(directory),
                    socket_b=os.fsencode(socket),
                ),
            )
            text = VIEW_SQUEUE.format(
                socket=shlex.quote(socket),
                socket_client=shlex.quote(str(client)),
                env_test="".join(f"${{{v}}}" for v in VIEW_ENV),
                max_name=MAX_NAME,
            )
        written.append(_write(directory / name, text))
    return written


def install_fs_wrappers(directory: Path, python: str | None = None) -> list[Path]:
    """grep/rg/find/du wrappers routing recursive work to the storage operators (frontdesk.shims.fswrap); a
    tool not found on PATH (outside `directory`) gets no wrapper."""
    import shutil

    from frontdesk.shims.fswrap import TOOLS, wrapper_text

    directory.mkdir(parents=True, exist_ok=True)
    others = os.pathsep.join(
        d for d in os.environ.get("PATH", "").split(os.pathsep) if d and Path(d).absolute() != directory
    )
    written = []
    for tool in TOOLS:
        real = shutil.which(tool, path=others)
        if real:
            written.append(
                _write(directory / tool, wrapper_text(tool, str(Path(real).absolute()), python or sys.executable))
            )
    return written


def _fast_python(python: str) -> str:
    """The interpreter for the socket-only client: the system's python3 starts faster than most venvs' and
    needs nothing installed (-I -S: no site-packages, no PYTHON* variables)."""
    system = Path("/usr/bin/python3")
    return str(system) if system.exists() and os.access(system, os.X_OK) else python


def _write(path: Path, text: str) -> Path:
    tmp = path.parent / f".{path.name}.tmp"
    tmp.write_text(text)
    tmp.chmod(0o755)
    tmp.replace(path)
    return path


def _install(args: argparse.Namespace) -> int:
    directory = Path(args.dir).absolute()
    paths = install_shims(directory)
    if args.fs:
        paths += install_fs_wrappers(directory)
    data = {
        "dir": str(directory),
        "shims": [str(p) for p in paths],
        "python": sys.executable,
        "path_hint": f"export PATH={directory}:$PATH",
    }
    emit(
        args.json,
        data,
        f"wrote {', '.join(p.name for p in paths)} to {directory}\n"
        f"put it first on the agent's PATH: export PATH={directory}:$PATH",
    )
    return 0
