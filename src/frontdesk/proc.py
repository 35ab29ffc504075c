"""The one place frontdesk runs subprocesses: argv lists only, never a shell, always a timeout.

A failure raises CommandFailed with argv, exit code and the end of stderr. Daemons (a shepherd, an autostarted
gateway) start through `frontdesk.spawn.spawn_detached` instead, which a client's first call imports.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, cast

from frontdesk.errors import BackendError, CommandFailed

__all__ = ["Result", "run", "run_async"]


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
) -> Result:
    """Run argv to completion; raise CommandFailed on a non-zero exit when `check`.

    Output is read as UTF-8 with invalid bytes replaced: what a command prints carries user text (job names,
    paths, comments), and no user's bytes may make a gateway-wide query fail. With `stdout_file` the command
    writes its output into that file (made 0600, replaced), read back when it ends: what it printed is kept
    even when this process dies before it ends (sbatch's job id, see backends/slurm/recovery.py).
    `started(pid)` is called before the command runs: the process waits (`_GATE`) until it returns, so the pid
    a caller records is the command's, and it never runs if this process dies first (backends/slurm/launches.py).
    `umask`: the command's (sbatch hands its own to the job); -1 keeps this process's."""
    args = [str(a) for a in argv]
    runs, how = args, cast(Callable[..., subprocess.CompletedProcess[str]], subprocess.run)
    if started is not None:
        runs, input, how = _through_gate(args, input, started)
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


def _through_gate(
    args: list[str], input: str | None, started: Callable[[int], None]
) -> tuple[list[str], str, Callable[..., subprocess.CompletedProcess[str]]]:
    """The argv through `_GATE`, the line that opens it, and the runner that calls `started` first."""
    if input is not None:
        raise ValueError("proc.run: `started` takes the command's stdin (its gate); no `input` with it")
    program = shutil.which(args[0]) or args[0]
    if not os.access(program, os.X_OK):
        raise BackendError(f"command not found: {args[0]}", argv=args)
    return ["/bin/sh", "-c", _GATE, "sh", program, *args[1:]], "go\n", partial(_gated, started)


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
) -> Result:
    """`run` without blocking the event loop (runs in a worker thread)."""
    return await asyncio.to_thread(
        partial(run, argv, timeout=timeout, check=check, input=input, env=env, cwd=cwd, stdout_file=stdout_file),
        started=started,
        umask=umask,
    )
