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

__all__ = ["Through", "LOOK_THROUGH", "command_after", "opt_width"]


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
    stop: frozenset[str] = frozenset()
    """The command starts only after one of these words (`kubectl exec POD -- CMD`, `xterm -e CMD`)."""
    code_flags: frozenset[str] = frozenset()
    """Options whose value is shell code (`flock -c`, `sbatch --wrap`)."""
    argv: bool = True
    """Whether the words after the options are a command (`nix-shell --run CODE` runs only its option)."""


def _f(*names: str) -> frozenset[str]:
    return frozenset(names)


def _w(names: str) -> frozenset[str]:
    return frozenset(names.split())


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
            "nohup command builtin setsid unbuffer caffeinate catchsegv xvfb-run proxychains proxychains4 "
            "torsocks ltrace busybox nocache eatmydata firejail coproc toybox dbus-run-session linux32 linux64 "
            "tini dumb-init catatonit prime-run optirun primusrun vglrun torify tsocks ifne chronic nq tsp "
            "run-one run-this-one keep-one-running valgrind"
        ).split(),
        _PLAIN,
    ),  # fmt: skip
    "exec": Through(values=_f("-a")),
    # sandboxes, namespaces, other users and privileges: the inner command runs all the same
    "fakeroot": Through(values=_f("-l", "--lib", "--faked", "-s", "-i")),
    "unshare": Through(
        values=_w(
            "-S --setuid -G --setgid -R --root -w --wd --propagation --map-user --map-group --map-users --map-groups"
        )
    ),  # fmt: skip
    "nsenter": Through(
        values=_f("-t", "--target", "-S", "--setuid", "-G", "--setgid", "-w", "--wd", "-r", "--root", "-e")
    ),  # fmt: skip
    "chroot": Through(values=_f("--userspec", "--groups", "--skip-chdir"), skip=1),
    "setpriv": Through(
        values=_w(
            "--reuid --regid --ruid --euid --rgid --egid --groups --inh-caps --ambient-caps "
            "--bounding-set --securebits --pdeathsig --selinux-label --apparmor-profile"
        )
    ),  # fmt: skip
    "prlimit": Through(values=_f("-p", "--pid", "-o", "--output")),
    "cgexec": Through(values=_f("-g")),
    "sem": Through(values=_f("-j", "--jobs", "--id", "--semaphorename", "--semaphoretimeout", "--st")),
    "systemd-inhibit": Through(values=_f("--what", "--who", "--why", "--mode")),
    "dbus-launch": Through(values=_f("--config-file", "--autolaunch")),
    "setarch": Through(skip=1),
    "faketime": Through(values=_f("-p"), skip=1),
    "daemonize": Through(values=_f("-c", "-e", "-o", "-p", "-l", "-u", "-E")),
    "ssh-agent": Through(values=_f("-a", "-t", "-E", "-P")),
    "sshpass": Through(values=_f("-p", "-f", "-d", "-P")),
    "trickle": Through(values=_f("-d", "-u", "-w", "-t", "-l", "-n")),
    "cpulimit": Through(values=_f("-l", "--limit", "-p", "--pid", "-e", "--exe", "-c", "--cpu")),
    "entr": Through(),
    "perf": Through(
        sub=_f("record", "stat", "trace", "top"),
        values=_w("-o --output -e --event -p --pid -t --tid -C --cpu -F --freq -c --count -r --repeat -I -G --cgroup"),
    ),  # fmt: skip
    "nsys": Through(
        sub=_f("profile", "launch"), long_values=True, values=_f("-o", "-t", "-s", "-w", "-c", "-d", "-y", "-e", "-b")
    ),
    "ncu": Through(long_values=True, values=_f("-o", "-k", "-c", "-s", "-f", "-e")),
    "gdb": Through(stop=_f("--args")),
    "cuda-gdb": Through(stop=_f("--args")),
    "lldb": Through(stop=_f("--")),
    # terminals and sessions that run their command elsewhere
    "xterm": Through(stop=_f("-e")),
    "uxterm": Through(stop=_f("-e")),
    "urxvt": Through(stop=_f("-e")),
    "konsole": Through(stop=_f("-e")),
    "lxterminal": Through(stop=_f("-e")),
    "alacritty": Through(stop=_f("-e", "--command")),
    "gnome-terminal": Through(stop=_f("--", "-x", "--execute")),
    "xfce4-terminal": Through(stop=_f("-x", "--execute"), code_flags=_f("-e", "--command")),
    # cluster shells: code run on many hosts
    "pdsh": Through(values=_f("-w", "-x", "-g", "-X", "-l", "-t", "-u", "-f", "-R", "-F", "-m"), code=True),
    "clush": Through(values=_f("-w", "-x", "-g", "-X", "-l", "-t", "-u", "-f", "-R", "-o", "-O", "-E"), code=True),
    "pssh": Through(values=_f("-h", "-H", "-l", "-p", "-o", "-e", "-t", "-x", "-X", "-O"), code=True),
    "parallel-ssh": Through(values=_f("-h", "-H", "-l", "-p", "-o", "-e", "-t", "-x", "-X", "-O"), code=True),
    "aprun": Through(values=_f("-n", "-N", "-d", "-j", "-cc", "-m", "-S", "-L", "-e", "-p")),
    "jsrun": Through(values=_f("-n", "-a", "-c", "-g", "-r", "-b", "-d", "-l", "-p"), long_values=True),
    "ibrun": Through(values=_f("-n", "-o")),
    # environments that run a command inside themselves
    "nix-shell": Through(code_flags=_f("--run", "--command"), values=_f("-p", "-A", "-I"), argv=False),
    "nix": Through(sub=_f("develop", "shell"), stop=_f("-c", "--command")),
    "guix": Through(sub=_f("shell", "environment"), stop=_f("--")),
    "direnv": Through(sub=_f("exec"), skip=1),
    "pyenv": Through(sub=_f("exec")),
    "rbenv": Through(sub=_f("exec")),
    "nodenv": Through(sub=_f("exec")),
    "bundle": Through(sub=_f("exec")),
    "npx": Through(values=_f("-p", "--package"), code_flags=_f("-c", "--call")),
    "lxc": Through(sub=_f("exec"), stop=_f("--")),
    "incus": Through(sub=_f("exec"), stop=_f("--")),
    "oc": Through(sub=_f("exec", "rsh"), values=_f("-n", "--namespace", "-c", "--container"), stop=_f("--")),
    "distrobox": Through(sub=_f("enter"), stop=_f("--")),
    "toolbox": Through(sub=_f("run"), values=_f("-c", "--container", "-d", "--distro", "-r", "--release")),
    "flatpak-spawn": Through(values=_f("--directory", "--forward-fd")),
    "hyperfine": Through(
        values=_w(
            "-w --warmup -m --min-runs -M --max-runs -r --runs -L --parameter-list --export-json "
            "--export-csv --export-markdown -n --command-name -S --shell"
        ),
        code_flags=_f("-p", "--prepare", "-c", "--cleanup", "-s", "--setup", "--conclude"),
        code=True,
    ),  # fmt: skip
    "time": Through(values=_f("-f", "-o", "--format", "--output")),
    "nice": Through(values=_f("-n", "--adjustment")),
    "ionice": Through(values=_f("-c", "-n", "-p", "--class", "--classdata", "--pid")),
    "chrt": Through(skip=1),
    "taskset": Through(skip=1),
    "stdbuf": Through(values=_f("-i", "-o", "-e", "--input", "--output", "--error")),  # -oL: attached
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
    "kubectl": Through(sub=_f("exec"), values=_f("-n", "--namespace", "-c", "--container", "--context"), stop=_f("--")),
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
        values=_w(
            "--with --with-requirements --with-editable --python -p --project --directory --env-file "
            "--extra --group --package --index --index-url --extra-index-url --find-links -f "
            "--config-file --cache-dir -C --config-setting"
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
        values=_w(
            "-u --unit -p --property -E --setenv --description --slice -M --machine -H --host --uid "
            "--gid --nice -D --working-directory --on-active --on-boot --on-calendar --timer-property "
            "--path-property --socket-property"
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
    return opt_width(t, spec.values | spec.code_flags)


def opt_width(t: str, values: frozenset[str] | set[str]) -> int:
    """How many words one short option (group) takes, as getopt reads it: `-u bob` and `-iu bob` take the
    next word, `-ubob` and `-j2` hold their value, `-dmS name` ends in one that takes a value."""
    if t in values:
        return 2
    if t.startswith("--"):
        return 1
    for k, ch in enumerate(t[1:], 1):
        if f"-{ch}" in values:
            return 1 if k < len(t) - 1 else 2
    return 1


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
        if spec.stop and not ended:
            i += 1
            ended = t in spec.stop
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
    if (spec.stop and not ended) or not spec.argv:
        return [], codes
    words = args[i:]
    if spec.code and words:
        texts = [w.text for w in words]
        while len(texts) > 1 and texts[-1] in _TMUX_KEYS:
            texts.pop()
        codes.append(" ".join(texts))
        return [], codes
    return words, codes
