"""The one place frontdesk runs subprocesses: argv lists only, never a shell, always a timeout.

A failure raises CommandFailed with argv, exit code and the end of stderr. Daemons (a shepherd, an autostarted
gateway) start through `frontdesk.spawn.spawn_detached` instead, which a client's first call imports.
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

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
) -> Result:
    """Run argv to completion; raise CommandFailed on a non-zero exit when `check`.

    Output is read as UTF-8 with invalid bytes replaced: what a command prints carries user text (job names,
    paths, comments), and no user's bytes may make a gateway-wide query fail."""
    args = [str(a) for a in argv]
    try:
        proc = subprocess.run(
            args,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",  # one job named with a byte 0xff made every `scontrol show job` raise
            timeout=timeout,
            input=input,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            check=False,
        )
    except FileNotFoundError:
        raise BackendError(f"command not found: {args[0]}", argv=args) from None
    except subprocess.TimeoutExpired as exc:
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        raise CommandFailed(args, -1, f"timed out after {timeout}s\n{err}") from None
    result = Result(args, proc.returncode, proc.stdout, proc.stderr)
    if check and proc.returncode != 0:
        raise CommandFailed(args, proc.returncode, proc.stderr)
    return result


async def run_async(
    argv: Sequence[str],
    *,
    timeout: float = 30.0,
    check: bool = True,
    input: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> Result:
    """`run` without blocking the event loop (runs in a worker thread)."""
    return await asyncio.to_thread(run, argv, timeout=timeout, check=check, input=input, env=env, cwd=cwd)
