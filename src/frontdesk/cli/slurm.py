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


_FAST_SQUEUE = r"""#!{fast_python} -IS
# frontdesk shim for `squeue`, socket-only: the gateway formats the answer from its cached view; this
# process only writes the command line to the socket and copies the reply (-I -S: no site-packages, no
# imports beyond the built-in posix/sys and _socket; `os` alone would cost 0.9 ms of a 6 ms start).
# Anything it cannot do goes to the full shim ({full}), which may hand the command line to the real
# squeue. Written by `frontdesk shim install`.
import posix, sys, _socket
E = posix.environ
CRLF = b"\r\n"
def full():
    posix.execve({python!r}, [{python!r}, {full!r}] + sys.argv[1:], {{**E, b"FRONTDESK_SHIM_DIR": {shim_dir_b!r}}})
if E.get(b"FRONTDESK_URL") or E.get(b"FRONTDESK_TOKEN") or E.get(b"FRONTDESK_SHIM_FULL"):
    full()
U = posix.getuid()
parts = [b"uid=%d" % U] + [k + b"=" + v for k, v in E.items() if k.startswith(b"SQUEUE_")]
body = b"\0".join(parts + [b"--"] + [a.encode("utf-8", "surrogateescape") for a in sys.argv[1:]])
head = b"POST /v1/slurm/text/squeue HTTP/1.0" + CRLF + b"Host: frontdesk" + CRLF
try:
    P = E.get(b"FRONTDESK_SOCKET") or {socket_b!r}
    D, S, T = posix.stat(P.rpartition(b"/")[0] or b"/"), posix.lstat(P), (0, U)
    if D.st_uid not in T or S.st_uid not in T or D.st_mode & 0o022 and not (D.st_mode & 0o1000 and D.st_uid == 0):
        full()  # not ours or root's (a squatter's?): the full shim checks and refuses with a message
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    s.settimeout(15.0)
    s.connect(P)
    s.sendall(head + b"Content-Length: %d" % len(body) + CRLF + CRLF + body)
    chunks = []
    while True:
        c = s.recv(262144)
        if not c:
            break
        chunks.append(c)
    s.close()
except OSError:
    full()
head, _, out = b"".join(chunks).partition(CRLF + CRLF)
lines = head.split(CRLF)
if len(lines[0].split(b" ")) < 2 or lines[0].split(b" ")[1] != b"200":
    full()
rc, err = 0, b""
for line in lines[1:]:
    key, _, value = line.partition(b":")
    key = key.strip().lower()
    if key == b"x-exit":
        rc = int(value)
    elif key == b"x-stderr-hex":
        err = bytes.fromhex(value.strip().decode())
if out:
    posix.write(1, out)
if err:
    posix.write(2, err)
sys.exit(rc)
"""


def register(sub: Any) -> None:
    """Add `notify` and `shim` to the CLI."""
    p = sub.add_parser("notify", help="tell the gateway Slurm jobs changed (EpilogSlurmctld entry point)")
    p.add_argument("ids", nargs="*", help="Slurm job ids (default: $SLURM_JOB_ID)")
    p.add_argument("--backend", default="slurm")
    p.add_argument("--socket", action="append", default=[], help="a gateway socket (repeatable)")
    p.add_argument("--targets-dir", help="a directory of files each naming a gateway socket")
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

    `squeue` is the socket-only client (fast=True) backed by the full shims in `directory/.full`."""
    from frontdesk.paths import socket_path_from_env

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
            full = str(full_dir / name)
            text = _FAST_SQUEUE.format(
                fast_python=_fast_python(python),
                python=python,
                full=full,
                shim_dir_b=os.fsencode(directory),
                socket_b=os.fsencode(socket),
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
