"""The one place frontdesk runs subprocesses: argv lists only, never a shell, always a timeout.

A failure raises CommandFailed with argv, exit code and the end of stderr. Daemons (a shepherd, an autostarted
gateway) start through `frontdesk.spawn.spawn_detached` instead, which a client's first call imports.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, cast

from frontdesk.errors import BackendError, CommandFailed

__all__ = ["AsUser", "Result", "run", "run_async"]


@dataclass(frozen=True)
class AsUser:
    """Whom a root process runs a command as (uid, primary gid, supplementary groups) and where it starts;
    `keyctl`: the keyctl system call's number here (-1: unknown), to leave root's session keyring first."""

    uid: int
    gid: int
    groups: tuple[int, ...]
    cwd: str
    keyctl: int = -1


@dataclass(frozen=True)
class Result:
    """What a finished subprocess left."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str


def run(
    argv: Sequence[str],
    *,
    timeout: float = 30.0,
    check: bool = True,
    input: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    stdout_file: str | os.PathLike[str] | None = None,
    started: Callable[[int], None] | None = None,
    umask: int = -1,
    as_user: AsUser | None = None,
) -> Result:
    """Run argv to completion; raise CommandFailed on a non-zero exit when `check`.

    Output is read as UTF-8 with invalid bytes replaced: what a command prints carries user text (job names,
    paths, comments), and no user's bytes may make a gateway-wide query fail. With `stdout_file` the command
    writes its output into that file (made 0600, replaced), read back when it ends: what it printed is kept
    even when this process dies before it ends (sbatch's job id, see backends/slurm/recovery.py).
    `started(pid)` is called before the command runs: the process waits (`_GATE`) until it returns, so the pid
    a caller records is the command's, and it never runs if this process dies first (backends/slurm/launches.py).
    `umask`: the command's (sbatch hands its own to the job); -1 keeps this process's. `as_user`: the command and
    its gate run as that user, entering `as_user.cwd` as them, outside root's session keyring (`_GATE_AS_USER`)."""
    args = [str(a) for a in argv]
    runs, how = args, cast(Callable[..., subprocess.CompletedProcess[str]], subprocess.run)
    started, cwd = (started or _nothing, "/") if as_user else (started, cwd)  # the gate enters as_user.cwd as them
    if started is not None:
        runs, input, how = _through_gate(args, input, started, as_user)
    out = None if stdout_file is None else _open_output(args[0], stdout_file)
    try:
        proc = how(
            runs,
            stdout=subprocess.PIPE if out is None else out,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",  # one job named with a byte 0xff made every `scontrol show job` raise
            timeout=timeout,
            input=input,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            check=False,
            umask=umask,
            **_ids(as_user),
        )
    except FileNotFoundError:
        raise BackendError(f"command not found: {args[0]}", argv=args) from None
    except subprocess.TimeoutExpired as exc:
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        raise CommandFailed(args, -1, f"timed out after {timeout}s\n{err}") from None
    finally:
        if out is not None:
            os.close(out)
    if stdout_file is not None:
        with open(stdout_file, encoding="utf-8", errors="replace") as fh:
            proc.stdout = fh.read(1 << 20)
    result = Result(args, proc.returncode, proc.stdout, proc.stderr)
    if check and proc.returncode != 0:
        raise CommandFailed(args, proc.returncode, proc.stderr)
    return result


_GATE = 'read -r go || exit 125; exec "$@"'
"""The gate: the command runs once a line comes on stdin, which is written only after `started(pid)` returned;
its pid stays the command's (exec). EOF (the caller died first) ends it unrun."""

_GATE_AS_USER = """import os, sys
line = b""
while not line.endswith(b"\\n"):
    c = os.read(0, 1)
    if not c:
        os._exit(125)
    line += c
try:
    if int(sys.argv[1]) >= 0:
        import ctypes
        call = ctypes.CDLL(None, use_errno=True).syscall
        call.restype = ctypes.c_long
        if call(int(sys.argv[1]), 1, None) < 0 and ctypes.get_errno() not in (1, 38):
            raise OSError(ctypes.get_errno(), "cannot leave the session keyring")
    os.chdir(sys.argv[2])
    os.execv(sys.argv[3], sys.argv[3:])
except OSError as exc:
    os.write(2, f"frontdesk: cannot start {sys.argv[3]} in {sys.argv[2]}: {exc.strerror or exc}\\n".encode())
    os._exit(126)
"""
"""The gate run as another user (`as_user`): the same line, then a new, empty session keyring (the gateway's
survives setuid and exec; a process its user may trace must not possess it), the user's cwd entered as them,
exec. Python (isolated; the real binary, as a venv's link may lead through root's 0700 home), as no shell can
join a keyring; stdin past the line is the command's."""


def _gate_python() -> str:
    """A Python interpreter every user may run, for the gate run as another user: this process's own where its
    path is open to all (a pyenv or venv interpreter under root's 0700 home is not: the user's exec would fail),
    else the system's; BackendError where there is none (never a gate that stays in root's keyring)."""
    seen = [os.path.realpath(sys.executable), os.path.realpath(getattr(sys, "_base_executable", sys.executable))]
    seen += [os.path.realpath(p) for p in ("/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3")]
    for path in seen:
        if os.path.isfile(path) and _open_to_all(path):
            return path
    raise BackendError(f"no Python interpreter other users may run (tried {', '.join(dict.fromkeys(seen))})")


def _open_to_all(path: str) -> bool:
    """Every directory above `path` is searchable by others and `path` is executable by others."""
    import stat

    parts = path.split("/")
    dirs = ["/".join(parts[:i]) or "/" for i in range(1, len(parts))]
    try:
        return all(os.stat(d).st_mode & stat.S_IXOTH for d in dirs) and bool(os.stat(path).st_mode & stat.S_IXOTH)
    except OSError:
        return False


def _nothing(pid: int) -> None:
    """A `started` that records nothing."""


def _ids(as_user: AsUser | None) -> dict[str, Any]:
    """Popen's arguments that make its child `as_user` (setgroups, setgid, setuid, in that order)."""
    if as_user is None:
        return {}
    return {"user": as_user.uid, "group": as_user.gid, "extra_groups": list(as_user.groups)}


def _through_gate(
    args: list[str], input: str | None, started: Callable[[int], None], as_user: AsUser | None = None
) -> tuple[list[str], str, Callable[..., subprocess.CompletedProcess[str]]]:
    """The argv through the gate, what opens it (then `input`, the command's stdin), and the runner that calls
    `started` first."""
    program = shutil.which(args[0]) or args[0]
    if not os.access(program, os.X_OK):
        raise BackendError(f"command not found: {args[0]}", argv=args)
    opens = "go\n" + (input or "")
    if as_user is not None:
        gate = [_gate_python(), "-I", "-S", "-c", _GATE_AS_USER, str(as_user.keyctl), as_user.cwd, program]
        return [*gate, *args[1:]], opens, partial(_gated, started)
    return ["/bin/sh", "-c", _GATE, "sh", program, *args[1:]], opens, partial(_gated, started)


def _gated(started: Callable[[int], None], args: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    """subprocess.run through `_GATE`, telling `started` the pid before the command runs."""
    timeout, input_text = kw.pop("timeout"), kw.pop("input")
    kw.pop("check")
    with subprocess.Popen(args, stdin=subprocess.PIPE, **kw) as p:
        try:
            started(p.pid)
            stdout, stderr = p.communicate(input_text, timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            raise
        except BaseException:
            p.kill()
            raise
    return subprocess.CompletedProcess(args, p.returncode, stdout, stderr)


def _open_output(program: str, path: str | os.PathLike[str]) -> int:
    """A fresh 0600 file for a command's output (never through a symlink); BackendError when it cannot be made."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        os.fchmod(fd, 0o600)  # one left from before keeps its mode otherwise
        return fd
    except OSError as exc:
        raise BackendError(f"{program}: cannot keep its output in {path}: {exc.strerror}") from None


async def run_async(
    argv: Sequence[str],
    *,
    timeout: float = 30.0,
    check: bool = True,
    input: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    stdout_file: str | os.PathLike[str] | None = None,
    started: Callable[[int], None] | None = None,
    umask: int = -1,
    as_user: AsUser | None = None,
) -> Result:
    """`run` without blocking the event loop (runs in a worker thread)."""
    return await asyncio.to_thread(
        partial(run, argv, timeout=timeout, check=check, input=input, env=env, cwd=cwd, stdout_file=stdout_file),
        started=started,
        umask=umask,
        as_user=as_user,
    )
