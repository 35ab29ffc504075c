"""A root gateway never runs sbatch with the submitter's environment: it hands it over in a file.

`sbatch --uid=U` runs as root, and a root process that is not setuid honours what the submitter's environment
says to the dynamic loader and libc (LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT, GCONV_PATH, ...) and to a site's
Lua cli_filter (LUA_INIT): with that environment in sbatch's own, any user of a facility gateway ran code as
root. So for a foreign job sbatch gets only the gateway's PATH and SLURM_CONF, and the job's environment goes
through `--export-file` (NUL-separated, in the gateway's 0700 job directory, read by sbatch as root): Slurm
gives the job exactly those variables, as `--export=ALL` did with sbatch's own (checked on Slurm 22.05:
`ALL`, `ALL,X=v` and `NONE` keep their meaning; a name list `A,B` gets the file cut to those names here).
sbatch gives the job its own process's umask (neither SLURM_UMASK in its environment nor in the file changes
that, checked on the lab): the submitter's FRONTDESK_UMASK goes along for the Runner to run sbatch with.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from frontdesk.errors import BackendError
from frontdesk.jobenv import UMASK_VAR

__all__ = ["FILE", "hand_over", "sbatch_env"]

FILE = "job.env"
"""The export file's name in the attempt's job directory."""


def sbatch_env(conf: str | None) -> dict[str, str]:
    """The environment a root gateway runs sbatch with: its own PATH and the cluster's SLURM_CONF, nothing else."""
    env = {"PATH": os.environ.get("PATH") or "/usr/bin:/bin", "LC_ALL": "C"}
    if conf:
        env["SLURM_CONF"] = conf
    return env


def _named(export: str | None) -> set[str] | None:
    """The variable names a `--export=A,B,C=v` list takes from the environment; None: all of them (ALL, NONE)."""
    if not export or export.split(",", 1)[0] in ("ALL", "NONE"):
        return None
    return {item for item in export.split(",") if item and "=" not in item}


def hand_over(job_env: Mapping[str, str], export: str | None, path: Path) -> tuple[dict[str, str], list[str]]:
    """Write the job's environment to `path` (0600) for `--export-file`; (sbatch's environment, the option)."""
    names = _named(export)
    parts = []
    for key, value in sorted(job_env.items()):
        if not key or "=" in key or "\0" in key or "\0" in value:
            raise BackendError(f"not an environment variable: {key[:64]!r}")
        if names is None or key in names:
            parts.append(f"{key}={value}".encode(errors="surrogateescape") + b"\0")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(b"".join(parts))
    env = sbatch_env(job_env.get("SLURM_CONF"))
    if UMASK_VAR in job_env:  # only a number: the Runner runs sbatch with it (sbatch hands the job its own umask)
        env[UMASK_VAR] = job_env[UMASK_VAR]
    return env, [f"--export-file={path}"]
