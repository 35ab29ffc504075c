"""`frontdesk sessions resume ID --on HOST`: the resume run on another login node over ssh.

The remote side is the same command without `--on` (`frontdesk sessions resume ID --dir DIR ...`), run by
the remote user's shell: it checks the directory is there, asks the gateway for the plan there and execs the
harness. ssh runs with `BatchMode=yes` (never a password prompt in a script), its output and exit status
pass through; when ssh itself cannot reach the host (its exit 255 with its own `ssh: ...` message) the
caller gets one line and `HostUnreachable` (exit 69). Stdlib only: the CLI imports it on demand.

`FRONTDESK_SSH` replaces the `ssh` word (e.g. `ssh -F ~/.ssh/cluster_config`); ~/.ssh/config applies as
for any ssh.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import IO

from frontdesk.errors import HostUnreachable, UserError

__all__ = ["SSH_EXIT", "remote_command", "run_over_ssh", "ssh_argv", "valid_host"]

SSH_EXIT = 255
"""ssh's own failure status (it cannot connect or authenticate)."""

_SSH_OWN = re.compile(
    r"^(?:ssh: |Host key verification failed|kex_exchange_identification: |Connection (?:closed|timed out|reset) "
    r"|\S+: Permission denied \()"
)
"""Lines ssh writes about its own connection (the remote command's stderr never starts a line like these)."""

_HOST = re.compile(r"(?:[A-Za-z0-9_][A-Za-z0-9._-]{0,63}@)?[A-Za-z0-9][A-Za-z0-9._-]{0,252}")


def valid_host(host: str) -> str:
    """`host` or `user@host` as ssh takes it; UserError for anything else (an option, a space, a quote)."""
    if not _HOST.fullmatch(host):
        raise UserError(f"--on {host!r}: not a host name")
    return host


def remote_command(
    session: str, directory: str, headless: bool, harness_args: Sequence[str], as_json: bool, via: str | None = None
) -> str:
    """The shell command the remote login shell runs: the resume there (it checks and enters the directory)."""
    inner = ["frontdesk", "sessions", "resume", session, "--dir", directory]
    inner += ["--headless"] if headless else []
    inner += ["--json"] if as_json else []
    inner += ["--via", via] if via else []
    inner += ["--harness-args", shlex.join(harness_args)] if harness_args else []
    return f"exec {shlex.join(inner)}"


def ssh_argv(host: str, command: str, *, tty: bool, env: Mapping[str, str] | None = None) -> list[str]:
    """The ssh argv: the configured ssh, no prompts, a TTY only for an interactive harness."""
    env = os.environ if env is None else env
    try:
        ssh = shlex.split(env.get("FRONTDESK_SSH") or "ssh")
    except ValueError as exc:
        raise UserError(f"FRONTDESK_SSH: {exc}") from None
    if not ssh:
        raise UserError("FRONTDESK_SSH is empty")
    opts = ["-o", "BatchMode=yes", "-o", "ConnectTimeout=15", "-t" if tty else "-T"]
    return [*ssh, *opts, valid_host(host), command]


def _forward(src: IO[bytes], dest: IO[bytes], kept: list[str]) -> None:
    """Copy the remote's stderr through as it comes; keep ssh's own messages (they name why it failed)."""
    for line in iter(src.readline, b""):
        text = line.decode("utf-8", errors="replace").rstrip("\n")
        if _SSH_OWN.match(text):
            kept.append(text)
            continue
        dest.write(line)
        dest.flush()


def run_over_ssh(argv: Sequence[str], host: str) -> int:
    """Run ssh with stdin/stdout passed through; its exit status, or HostUnreachable when ssh failed to connect."""
    try:
        proc = subprocess.Popen(list(argv), stderr=subprocess.PIPE)
    except OSError as exc:
        raise UserError(f"{argv[0]}: {exc.strerror or exc}") from None
    assert proc.stderr is not None
    kept: list[str] = []
    err = sys.stderr.buffer if hasattr(sys.stderr, "buffer") else sys.stderr
    pump = threading.Thread(target=_forward, args=(proc.stderr, err, kept), daemon=True)
    pump.start()
    try:
        code = proc.wait()
    except KeyboardInterrupt:
        proc.terminate()
        code = proc.wait()
    pump.join(timeout=5)
    if code == SSH_EXIT and kept:
        raise HostUnreachable(f"cannot reach {host} over ssh: {kept[-1].removeprefix('ssh: ')}", host=host)
    for text in kept:  # a warning from ssh on a session that did run
        sys.stderr.write(text + "\n")
    return code
