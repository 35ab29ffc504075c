"""The look-through table: programs that run another command, and where that command starts.

One row per wrapper, as data: which subcommand it needs (`conda run`, `docker exec`), which options take a
value (so `srun --time 10 CMD` is not read as the program `10`), how many positional words come before
the command (`timeout DURATION`, `ssh HOST`, `apptainer exec IMAGE`), and whether the rest is an argv or
shell code the wrapper hands to a shell (`ssh HOST 'a; b'`, `watch`, `tmux new -d '...'`). Special forms
(sudo, env, sh -c, xargs, parallel, find -exec, interpreters) are in wrappers.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from frontdesk.guard.words import Word

__all__ = ["Through", "LOOK_THROUGH", "command_after"]


@dataclass(frozen=True)
class Through:
    """Where the inner command of one wrapper starts."""

    sub: frozenset[str] = frozenset()
    """The wrapper runs a command only under one of these subcommands (empty: always)."""
    values: frozenset[str] = frozenset()
    """Options that take the next word as their value (`-n`, `--name`); `-dmS` ends in one, `-j2` holds one."""
    long_values: bool = False
    """Every `--long` option takes a value unless it is in `bools` (Slurm, MPI, Apptainer)."""
    bools: frozenset[str] = frozenset()
    skip: int = 0
    """Positional words before the command (a duration, a host, a container, an image, a lock file)."""
    code: bool = False
    """The rest is joined into one line of shell code (ssh, watch, tmux), not an argv."""
    stop: str | None = None
    """The command starts only after this word (`kubectl exec POD -- CMD`)."""
    code_flags: frozenset[str] = frozenset()
    """Options whose value is shell code (`flock -c`, `sbatch --wrap`)."""


def _f(*names: str) -> frozenset[str]:
    return frozenset(names)


_SLURM_BOOLS = _f(
    "--exclusive", "--pty", "--overlap", "--x11", "--unbuffered", "--label", "--verbose", "--quiet",
    "--test-only", "--no-kill", "--kill-on-bad-exit", "--spread-job", "--overcommit", "--oversubscribe",
    "--contiguous", "--hold", "--no-shell", "--use-min-nodes", "--disable-status", "--preserve-env",
    "--exact", "--whole", "--multi-prog", "--immediate", "--wait-all-nodes", "--help", "--usage", "--parsable",
    "--requeue", "--no-requeue", "--reboot", "--ignore-pbs", "--wait",
)  # fmt: skip
_SLURM_SHORT = _f(*(f"-{c}" for c in "pNnctJAGwxoeqCmLdDBMSTWb"))
_MPI_VALUES = _f(
    "-n", "-np", "-c", "-N", "-H", "-host", "--host", "-x", "-hostfile", "--hostfile", "-machinefile", "-f",
    "-ppn", "-wdir", "-mca", "--mca", "-genv", "-env", "--map-by", "--bind-to", "--rank-by", "-npernode",
)  # fmt: skip
_MPI_BOOLS = _f(
    "--oversubscribe", "--allow-run-as-root", "--report-bindings", "--tag-output", "--timestamp-output",
    "--display-map", "--verbose", "--quiet", "--noprefix", "--nolocal",
)  # fmt: skip
_CONTAINER_BOOLS = _f(
    "--nv", "--nvccli", "--rocm", "--cleanenv", "-e", "--contain", "-c", "--containall", "-C", "--writable",
    "-w", "--fakeroot", "-f", "--no-home", "--writable-tmpfs", "--userns", "-u", "--compat", "--no-init",
    "--no-privs", "--keep-privs", "--no-https", "--disable-cache", "--no-eval", "-i", "--ipc", "-p", "--pid",
)  # fmt: skip
_RUNNERS_RUN = Through(sub=_f("run"))
_SSH_VALUES = _f(*(f"-{c}" for c in "pilOFJLRDEbcemQSWwBI"), "-o")
_DOCKER_EXEC = Through(
    sub=_f("exec"),
    values=_f("-e", "--env", "-u", "--user", "-w", "--workdir", "--env-file", "--detach-keys"),
    skip=1,
)
_TMUX = Through(
    sub=_f(
        "new", "new-session", "new-window", "neww", "split-window", "splitw", "send-keys", "send",
        "respawn-pane", "respawnp", "respawn-window", "respawnw", "run-shell", "run",
    ),
    values=_f("-s", "-n", "-t", "-c", "-x", "-y", "-F", "-e", "-l", "-N", "-f"),
    code=True,
)  # fmt: skip
_PLAIN = Through()

LOOK_THROUGH: dict[str, Through] = {
    **dict.fromkeys(
        (
            "nohup",
            "exec",
            "command",
            "builtin",
            "setsid",
            "unbuffer",
            "caffeinate",
            "catchsegv",
            "xvfb-run",
            "proxychains",
            "proxychains4",
            "torsocks",
            "ltrace",
            "busybox",
            "nocache",
            "eatmydata",
            "firejail",
            "coproc",
        ),
        _PLAIN,
    ),  # fmt: skip
    "time": Through(values=_f("-f", "-o", "--format", "--output")),
    "nice": Through(values=_f("-n", "--adjustment")),
    "ionice": Through(values=_f("-c", "-n", "-p", "--class", "--classdata", "--pid")),
    "chrt": Through(skip=1),
    "taskset": Through(skip=1),
    "stdbuf": Through(values=_f("-i", "-o", "-e", "--input", "--output", "--error")),
    "numactl": Through(
        values=_f("-C", "-N", "-m", "-p", "-i", "--physcpubind", "--cpunodebind", "--membind", "--preferred")
    ),
    "flock": Through(values=_f("-w", "-E", "--timeout", "--conflict-exit-code"), skip=1, code_flags=_f("-c")),
    "strace": Through(values=_f("-o", "-e", "-p", "-s", "-u", "-P", "-E", "-S", "-a", "-b", "-I", "-O", "-X")),
    "timeout": Through(values=_f("-s", "-k", "--signal", "--kill-after"), skip=1),
    "watch": Through(values=_f("-n", "--interval", "-q", "--equexit"), code=True),
    "srun": Through(values=_SLURM_SHORT, long_values=True, bools=_SLURM_BOOLS),
    "salloc": Through(values=_SLURM_SHORT, long_values=True, bools=_SLURM_BOOLS),
    "mpirun": Through(values=_MPI_VALUES, long_values=True, bools=_MPI_BOOLS),
    "mpiexec": Through(values=_MPI_VALUES, long_values=True, bools=_MPI_BOOLS),
    "ssh": Through(values=_SSH_VALUES, skip=1, code=True),
    "docker": _DOCKER_EXEC,
    "podman": _DOCKER_EXEC,
    "nerdctl": _DOCKER_EXEC,
    "kubectl": Through(sub=_f("exec"), values=_f("-n", "--namespace", "-c", "--container", "--context"), stop="--"),
    "apptainer": Through(
        sub=_f("exec"), values=_f("-B", "-H", "-W", "-o"), long_values=True, bools=_CONTAINER_BOOLS, skip=1
    ),
    "singularity": Through(
        sub=_f("exec"), values=_f("-B", "-H", "-W", "-o"), long_values=True, bools=_CONTAINER_BOOLS, skip=1
    ),
    "conda": Through(sub=_f("run"), values=_f("-n", "--name", "-p", "--prefix", "--cwd")),
    "mamba": Through(sub=_f("run"), values=_f("-n", "--name", "-p", "--prefix", "--cwd")),
    "micromamba": Through(sub=_f("run"), values=_f("-n", "--name", "-p", "--prefix", "--cwd")),
    "uv": Through(
        sub=_f("run"),
        values=_f(
            "--with",
            "--with-requirements",
            "--with-editable",
            "--python",
            "-p",
            "--project",
            "--directory",
            "--env-file",
            "--extra",
            "--group",
            "--package",
            "--index",
            "--index-url",
            "--extra-index-url",
            "--find-links",
            "-f",
            "--config-file",
            "--cache-dir",
            "-C",
            "--config-setting",
        ),
    ),  # fmt: skip
    "pixi": Through(sub=_f("run", "exec"), values=_f("-e", "--environment", "--manifest-path", "-s", "--spec")),
    "poetry": Through(sub=_f("run"), values=_f("-C", "--directory", "-P", "--project")),
    "pipenv": _RUNNERS_RUN,
    "pdm": _RUNNERS_RUN,
    "hatch": _RUNNERS_RUN,
    "rye": _RUNNERS_RUN,
    "tmux": _TMUX,
    "screen": Through(values=_f("-S", "-c", "-T", "-p", "-t", "-e", "-h", "-s")),
    "runuser": Through(
        values=_f("-u", "--user", "-g", "--group", "-G", "--supp-group", "-w", "--whitelist-environment"),
        code_flags=_f("-c", "--command"),
    ),
    "systemd-run": Through(
        values=_f(
            "-u",
            "--unit",
            "-p",
            "--property",
            "-E",
            "--setenv",
            "--description",
            "--slice",
            "-M",
            "--machine",
            "-H",
            "--host",
            "--uid",
            "--gid",
            "--nice",
            "-D",
            "--working-directory",
            "--on-active",
            "--on-boot",
            "--on-calendar",
            "--timer-property",
            "--path-property",
            "--socket-property",
        )
    ),  # fmt: skip
    "proot": Through(
        values=_f("-r", "--rootfs", "-b", "--bind", "-m", "--mount", "-w", "--pwd", "--cwd", "-q", "--qemu")
    ),
}

_TMUX_KEYS = {"Enter", "C-m", "C-j", "KPEnter"}


def _width(t: str, spec: Through) -> int:
    """How many words one option takes (itself, and its value when it has a separate one)."""
    if t.startswith("--"):
        if "=" in t:
            return 1
        if t in spec.values or t in spec.code_flags:
            return 2
        return 2 if spec.long_values and t not in spec.bools else 1
    if t in spec.values or t in spec.code_flags:
        return 2
    if t[:2] in spec.values:
        return 1  # -j2, -Shost: the value is attached
    return 2 if f"-{t[-1]}" in spec.values else 1  # -dmS name


def command_after(args: list[Word], spec: Through) -> tuple[list[Word], list[str]]:
    """(the inner argv, shell code found in option values) of a wrapper's arguments."""
    codes: list[str] = []
    i = 0
    if spec.sub:
        while i < len(args) and args[i].is_flag:
            i += 1
        if i >= len(args) or args[i].text not in spec.sub:
            return [], codes
        i += 1
    skipped = 0
    ended = False
    while i < len(args):
        t = args[i].text
        if spec.stop is not None and not ended:
            i += 1
            ended = t == spec.stop
            continue
        if not ended and t == "--":
            ended = True
            i += 1
            continue
        if not ended and args[i].is_flag:
            name, eq, value = t.partition("=")
            if name in spec.code_flags:
                if eq:
                    codes.append(value)
                elif i + 1 < len(args):
                    codes.append(args[i + 1].text)
            i += _width(t, spec)
            continue
        if skipped < spec.skip:
            skipped += 1
            i += 1
            continue
        break
    if spec.stop is not None and not ended:
        return [], codes
    words = args[i:]
    if spec.code and words:
        texts = [w.text for w in words]
        while len(texts) > 1 and texts[-1] in _TMUX_KEYS:
            texts.pop()
        codes.append(" ".join(texts))
        return [], codes
    return words, codes
