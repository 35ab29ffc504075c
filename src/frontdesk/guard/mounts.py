"""Containers, sandboxes and chroots that map a host path into the command they run.

`docker run -v ~:/h IMG rm -rf /h` deletes the home directory as surely as `rm -rf ~`: the inner command is
read with each mount's target put back to its source (`/h` -> `~`), in its words and in shell code it hands
on (`sh -c 'rm -rf /h/*'`). One reader per program knows its mount options and where its command starts:
docker/podman/nerdctl `run` (`-v`, `--volume`, `--mount type=bind,...`, `-w`, `--entrypoint`),
apptainer/singularity `exec|run` (`-B`, `--bind`, `-H`, `--home`, `--pwd`; they also bind $HOME and the
working directory themselves, which needs no mapping), `bwrap` (`--bind SRC DST`, `--ro-bind`, `--chdir`),
`systemd-nspawn` (`-D ROOT`, `--bind=SRC[:DST]`) and `chroot ROOT` (ROOT becomes /). Read-only mounts map too:
reading keys through one is still reading them. Pure: nothing here touches the filesystem.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from frontdesk.guard.words import Word

__all__ = ["Contained", "CONTAINERS", "contained", "map_text", "pyxis_mounts"]

Mount = tuple[str, str]  # (source on the host, target inside)


@dataclass
class Contained:
    """The command a container or sandbox runs, and the host paths its own paths stand for."""

    argv: list[Word]
    mounts: list[Mount] = field(default_factory=list)
    workdir: str | None = None
    shell: bool = False
    """It starts a shell that reads its code on stdin (`apptainer shell IMG <<< CODE`)."""


def _host(src: str, cwd: str | None) -> str | None:
    """A bind source as a host path (`~`, `$HOME/x`, `/abs`, `./rel`); None for a named volume."""
    if src.startswith(("/", "~")):
        return src
    if src.startswith("."):
        return os.path.normpath(os.path.join(cwd or ".", src))
    return None


def _docker_volume(spec: str, cwd: str | None) -> Mount | None:
    """`SRC:DST[:OPTS]` (a named volume or a bare DST binds nothing from the host)."""
    parts = spec.split(":")
    if len(parts) < 2:
        return None
    src = _host(parts[0], cwd)
    return (src, parts[1]) if src and parts[1].startswith("/") else None


def _docker_mount(spec: str, cwd: str | None) -> Mount | None:
    """`type=bind,source=S,target=D[,readonly]` (src/dst/destination spellings too)."""
    fields = dict(part.partition("=")[::2] for part in spec.split(","))
    if fields.get("type", "volume") != "bind":
        return None
    src = _host(fields.get("source") or fields.get("src") or "", cwd)
    dst = fields.get("target") or fields.get("dst") or fields.get("destination") or ""
    return (src, dst) if src and dst.startswith("/") else None


_DOCKER_BOOLS = frozenset(
    "--rm --detach --interactive --tty --privileged --init --read-only --publish-all --no-healthcheck "
    "--oom-kill-disable --quiet --sig-proxy --help --disable-content-trust --replace --rmi --tls-verify".split()
)  # fmt: skip
_DOCKER_SHORT_BOOLS = frozenset("ditPq")


def _value_option(args: list[Word], i: int) -> tuple[str, str | None, int]:
    """(name, value, words taken) of the option at `args[i]`: `--x=V`, `--x V`, `-vV`, `-v V`."""
    t = args[i].text
    if t.startswith("--"):
        name, eq, value = t.partition("=")
        if eq:
            return name, value, 1
        if name in _DOCKER_BOOLS:
            return name, None, 1
        return name, args[i + 1].text if i + 1 < len(args) else None, 2
    group = t[1:]
    for k, ch in enumerate(group):
        if ch not in _DOCKER_SHORT_BOOLS:
            rest = group[k + 1 :]
            if rest:
                return f"-{ch}", rest, 1
            return f"-{ch}", args[i + 1].text if i + 1 < len(args) else None, 2
    return t, None, 1


def _docker_run(args: list[Word], cwd: str | None) -> Contained | None:
    """`docker run [OPTIONS] IMAGE [CMD...]` (podman, nerdctl alike; `docker container run` too)."""
    i = 0
    while i < len(args) and args[i].is_flag:
        i += 1
    if i < len(args) and args[i].text == "container":
        i += 1
    if i < len(args) and args[i].text == "unshare":  # podman/buildah unshare CMD: on the host, in a user namespace
        return Contained(args[i + 1 :])
    if i >= len(args) or args[i].text != "run":
        return None
    i += 1
    out = Contained([])
    entry: list[Word] = []
    while i < len(args) and args[i].is_flag and args[i].text != "--":
        name, value, width = _value_option(args, i)
        if value is not None:
            mount = None
            if name in ("-v", "--volume"):
                mount = _docker_volume(value, cwd)
            elif name == "--mount":
                mount = _docker_mount(value, cwd)
            elif name in ("-w", "--workdir"):
                out.workdir = value
            elif name == "--entrypoint":
                entry = [Word(value, value)]
            if mount:
                out.mounts.append(mount)
        i += width
    i += 1 if i < len(args) and args[i].text == "--" else 0
    out.argv = entry + args[i + 1 :]  # after the image
    return out


def _binds(spec: str, cwd: str | None) -> list[Mount]:
    """apptainer's `SRC[:DST[:OPTS]][,SRC...]` (DST defaults to SRC)."""
    out: list[Mount] = []
    for part in spec.split(","):
        src, _, rest = part.partition(":")
        dst = rest.partition(":")[0] or src
        host = _host(src, cwd)
        if host and dst.startswith("/"):
            out.append((host, dst))
    return out


_APPTAINER_BOOLS = frozenset(
    "--nv --nvccli --rocm --cleanenv -e --contain -c --containall -C --writable -w --fakeroot -f --no-home "
    "--writable-tmpfs --userns -u --compat --no-init --no-privs --keep-privs --no-https --disable-cache "
    "--no-eval -i --ipc -p --pid --no-mount --net -n --boot --allow-setuid".split()
)  # fmt: skip


def _apptainer(args: list[Word], cwd: str | None) -> Contained | None:
    """`apptainer exec|run [OPTIONS] IMAGE [CMD...]`."""
    i = 0
    while i < len(args) and args[i].is_flag:
        i += 1
    if i >= len(args) or args[i].text not in ("exec", "run", "shell"):
        return None
    shell = args[i].text == "shell"
    i += 1
    out = Contained([], shell=shell)
    while i < len(args) and args[i].is_flag and args[i].text != "--":
        t = args[i].text
        name, eq, value = t.partition("=")
        width = 1
        if not eq and name not in _APPTAINER_BOOLS:
            value, width = (args[i + 1].text if i + 1 < len(args) else ""), 2
        if name in ("-B", "--bind", "--mount"):
            out.mounts += _binds(value.replace("source=", "").replace("src=", ""), cwd) if name != "--mount" else []
            if name == "--mount":
                mount = _docker_mount("type=bind," + value, cwd)
                out.mounts += [mount] if mount else []
        elif name in ("-H", "--home"):
            src, _, dst = value.partition(":")
            host = _host(src, cwd)
            if host:
                out.mounts.append((host, dst or src))
        elif name == "--pwd":
            out.workdir = value
        i += width
    i += 1 if i < len(args) and args[i].text == "--" else 0
    out.argv = [] if shell else args[i + 1 :]
    return out


_BWRAP_TWO = frozenset(
    "--bind --bind-try --dev-bind --dev-bind-try --ro-bind --ro-bind-try --symlink --setenv --file "
    "--bind-data --ro-bind-data --chmod".split()
)  # fmt: skip
_BWRAP_ONE = frozenset(
    "--chdir --tmpfs --proc --dev --dir --unsetenv --remount-ro --seccomp --exec-label --file-label "
    "--lock-file --sync-fd --info-fd --json-status-fd --block-fd --userns-block-fd --uid --gid --hostname "
    "--cap-add --cap-drop --perms --size --args --userns --userns2 --pidns --argv0 --mqueue --overlay-src "
    "--tmp-overlay --ro-overlay".split()
)  # fmt: skip
_BWRAP_MOUNTS = frozenset(("--bind", "--bind-try", "--dev-bind", "--dev-bind-try", "--ro-bind", "--ro-bind-try"))


def _bwrap(args: list[Word], cwd: str | None) -> Contained:
    """`bwrap [OPTIONS] CMD...`: `--bind SRC DST` (two values), `--chdir DIR`."""
    out = Contained([])
    i = 0
    while i < len(args) and args[i].is_flag and args[i].text != "--":
        t = args[i].text
        if t in _BWRAP_TWO:
            if t in _BWRAP_MOUNTS and i + 2 < len(args):
                host = _host(args[i + 1].text, cwd)
                if host and args[i + 2].text.startswith("/"):
                    out.mounts.append((host, args[i + 2].text))
            i += 3
        elif t in _BWRAP_ONE:
            if t == "--chdir" and i + 1 < len(args):
                out.workdir = args[i + 1].text
            i += 2
        else:
            i += 1
    i += 1 if i < len(args) and args[i].text == "--" else 0
    out.argv = args[i:]
    return out


def _nspawn(args: list[Word], cwd: str | None) -> Contained:
    """`systemd-nspawn -D ROOT --bind=SRC[:DST] [CMD...]` (ROOT becomes /, a bind lies over it)."""
    out = Contained([])
    values = {"-D", "--directory", "-M", "--machine", "-u", "--user", "-E", "--setenv", "--bind", "--bind-ro",
              "--chdir", "-i", "--image", "--network-veth-extra", "-p", "--port", "--private-users", "-S",
              "--slice", "--property", "--uuid", "--hostname", "--overlay", "--overlay-ro", "--tmpfs"}  # fmt: skip
    root: str | None = None
    i = 0
    while i < len(args) and args[i].is_flag and args[i].text != "--":
        name, eq, value = args[i].text.partition("=")
        width = 1
        if not eq and name in values:
            value, width = (args[i + 1].text if i + 1 < len(args) else ""), 2
        elif not eq and len(name) > 2 and not name.startswith("--") and f"-{name[1]}" in values:
            value = name[2:]  # -D/srv/c
            name = name[:2]
        if name in ("-D", "--directory"):
            root = _host(value, cwd)
        elif name in ("--bind", "--bind-ro"):
            out.mounts += _binds(value, cwd)[:1]
        elif name == "--chdir":
            out.workdir = value
        i += width
    i += 1 if i < len(args) and args[i].text == "--" else 0
    if root:
        out.mounts.append((root, "/"))
    out.argv = args[i:]
    return out


def _chroot(args: list[Word], cwd: str | None) -> Contained | None:
    """`chroot [OPTIONS] ROOT [CMD...]`: ROOT becomes /."""
    i = 0
    while i < len(args) and args[i].is_flag and args[i].text != "--":
        i += 1 if "=" in args[i].text or args[i].text == "--skip-chdir" else 2
    i += 1 if i < len(args) and args[i].text == "--" else 0
    if i >= len(args) or args[i].dynamic:
        return None
    root = _host(args[i].text, cwd)
    return Contained(args[i + 1 :], [(root, "/")] if root else [])


def _mount_opts(
    args: list[Word], cwd: str | None, binds: frozenset[str], values: frozenset[str], root: frozenset[str] = frozenset()
) -> tuple[Contained, int]:
    """Options up to the first positional: `binds` take `SRC[:DST]` (comma lists too), `root` a new root."""
    out = Contained([])
    i = 0
    while i < len(args) and args[i].is_flag and args[i].text != "--":
        name, eq, value = args[i].text.partition("=")
        width = 1
        if not eq and (name in binds or name in values or name in root):
            value, width = (args[i + 1].text if i + 1 < len(args) else ""), 2
        elif not eq and not name.startswith("--") and len(name) > 2 and name[:2] in binds | root:
            name, value = name[:2], name[2:]
        if name in binds:
            out.mounts += _binds(value, cwd)
        elif name in root and (host := _host(value, cwd)):
            out.mounts.append((host, "/"))
        elif name in ("-w", "--pwd", "--workdir", "-c", "--cd"):
            out.workdir = value
        i += width
    return out, i + (1 if i < len(args) and args[i].text == "--" else 0)


def _enroot(args: list[Word], cwd: str | None) -> Contained | None:
    """`enroot start [--mount SRC:DST] [--rw] [--root] [-e K=V] NAME [CMD...]`."""
    if not args or args[0].text not in ("start", "exec"):
        return None
    out, i = _mount_opts(args[1:], cwd, frozenset(("-m", "--mount")), frozenset(("-e", "--env", "-c", "--conf")))
    out.argv = args[1 + i + 1 :]
    return out


def _ch_run(args: list[Word], cwd: str | None) -> Contained:
    """Charliecloud `ch-run [-b SRC[:DST]] [-c DIR] IMAGE -- CMD...`."""
    values = frozenset(("-c", "--cd", "--set-env", "--unset-env", "-g", "--gid", "-u", "--uid", "-s", "--storage"))
    out, i = _mount_opts(args, cwd, frozenset(("-b", "--bind")), values)
    rest = args[i + 1 :]  # after the image
    if rest and rest[0].text == "--":
        rest = rest[1:]
    out.argv = rest
    return out


def _proot(args: list[Word], cwd: str | None) -> Contained:
    """`proot [-r ROOT] [-b SRC[:DST]] [-w DIR] CMD...`."""
    values = frozenset(("-q", "--qemu", "-k", "--kernel-release"))
    root = frozenset(("-r", "--rootfs", "-R"))
    out, i = _mount_opts(args, cwd, frozenset(("-b", "--bind", "-m", "--mount")), values, root)
    out.argv = args[i:]
    return out


def _arch_chroot(args: list[Word], cwd: str | None) -> Contained | None:
    """`arch-chroot [-u USER] [-N] ROOT [CMD...]`: ROOT becomes /."""
    words = [w for k, w in enumerate(args) if not w.is_flag and not (k and args[k - 1].text == "-u")]
    if not words or words[0].dynamic:
        return None
    root = _host(words[0].text, cwd)
    return Contained(args[args.index(words[0]) + 1 :], [(root, "/")] if root else [])


def pyxis_mounts(args: list[Word], cwd: str | None) -> list[Mount]:
    """Slurm's pyxis `srun --container-mounts=SRC:DST[,SRC:DST]`: the mounts the step's command sees."""
    out: list[Mount] = []
    for k, w in enumerate(args):
        if w.text.startswith("--container-mounts="):
            out += _binds(w.text.partition("=")[2], cwd)
        elif w.text == "--container-mounts" and k + 1 < len(args):
            out += _binds(args[k + 1].text, cwd)
    return out


CONTAINERS: dict[str, Callable[[list[Word], str | None], Contained | None]] = {
    "docker": _docker_run,
    "podman": _docker_run,
    "nerdctl": _docker_run,
    "apptainer": _apptainer,
    "singularity": _apptainer,
    "bwrap": _bwrap,
    "systemd-nspawn": _nspawn,
    "chroot": _chroot,
    "udocker": _docker_run,
    "buildah": _docker_run,
    "enroot": _enroot,
    "ch-run": _ch_run,
    "proot": _proot,
    "arch-chroot": _arch_chroot,
}


def contained(prog: str, args: list[Word], cwd: str | None) -> Contained | None:
    """What `prog args` runs inside its container, with its host mounts; None when it runs nothing here."""
    reader = CONTAINERS.get(prog)
    out = reader(args, cwd) if reader else None
    if out is None:
        return None
    out.mounts = [(s, d.rstrip("/") or "/") for s, d in out.mounts if not (s.rstrip("/") == d.rstrip("/"))]
    return out


_LEFT = r"(?<![\w.~$/-])"


def map_text(text: str, mounts: list[Mount]) -> str:
    """`text` with every path under a mount target put back to the host source (longest target first)."""
    if not mounts or "/" not in text:
        return text
    order = sorted(mounts, key=lambda m: -len(m[1]))
    by_dst = dict((d, s) for s, d in reversed(order))
    alts = [re.escape(d) + r"(?=/|$|[\s'\";|&)<>`])" for d in by_dst if d != "/"]
    if "/" in by_dst:  # a new root: but devices and kernel trees stay the host's (chroots bind them in)
        alts.append(r"/(?!(?:dev|proc|sys)(?:/|$|\s))")
    pattern = re.compile(_LEFT + "(" + "|".join(alts) + ")")

    def put(m: re.Match[str]) -> str:
        dst = m.group(1)
        if dst == "/":
            return by_dst["/"].rstrip("/") + "/"
        return by_dst[dst]

    return pattern.sub(put, text)
