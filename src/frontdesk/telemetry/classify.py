"""Command classes the paper counts, from an argv (pure).

Wrappers (`sudo`, `env`, `time`, `nice`, `timeout`, `nohup`, `command`) are looked through, and a shell's
`-c` text is split and classified by its first command. One command may fall in several classes
(`git clone` is version control and an external fetch).
"""

from __future__ import annotations

import enum
import os
import shlex
from collections.abc import Sequence

__all__ = ["CommandClass", "classify", "command_of"]


class CommandClass(enum.StrEnum):
    """What a command does, in the paper's categories."""

    FILE_READ = "file_read"
    FILE_EDIT = "file_edit"
    BUILD = "build"
    PACKAGE = "package"
    VCS = "vcs"
    SCHED_QUERY = "sched_query"
    SCHED_SUBMIT = "sched_submit"
    SCHED_CANCEL = "sched_cancel"
    DESTRUCTIVE = "destructive"
    FETCH = "fetch"
    TREE_WALK = "tree_walk"


C = CommandClass
_BY_NAME: dict[str, tuple[CommandClass, ...]] = {
    **dict.fromkeys(("cat", "head", "tail", "less", "more", "bat", "nl", "wc", "file", "stat", "xxd"), (C.FILE_READ,)),
    **dict.fromkeys(
        ("vi", "vim", "nvim", "nano", "emacs", "ed", "patch", "apply_patch", "tee", "touch"), (C.FILE_EDIT,)
    ),
    **dict.fromkeys(("make", "cmake", "ninja", "gcc", "g++", "cc", "c++", "clang", "nvcc", "gfortran"), (C.BUILD,)),
    **dict.fromkeys(("mvn", "gradle", "bazel", "meson", "scons", "rustc", "javac", "ld"), (C.BUILD,)),
    **dict.fromkeys(("pip", "pip3", "conda", "mamba", "micromamba", "uv", "npm", "yarn", "pnpm"), (C.PACKAGE,)),
    **dict.fromkeys(("apt", "apt-get", "spack", "module", "ml", "virtualenv", "poetry", "pipx"), (C.PACKAGE,)),
    **dict.fromkeys(("git", "hg", "svn", "gh"), (C.VCS,)),
    **dict.fromkeys(("squeue", "sinfo", "sacct", "sstat", "sprio", "sshare", "qstat", "scontrol"), (C.SCHED_QUERY,)),
    **dict.fromkeys(("sbatch", "srun", "salloc", "qsub"), (C.SCHED_SUBMIT,)),
    **dict.fromkeys(("scancel", "qdel"), (C.SCHED_CANCEL,)),
    **dict.fromkeys(("shred", "wipefs"), (C.DESTRUCTIVE,)),
    **dict.fromkeys(("curl", "wget", "aria2c", "scp", "sftp", "ftp", "ssh"), (C.FETCH,)),
    **dict.fromkeys(("find", "tree", "du", "rg", "fd", "fdfind", "ag", "locate"), (C.TREE_WALK,)),
}
_WRAPPERS = frozenset({"sudo", "env", "time", "nice", "ionice", "timeout", "nohup", "command", "exec", "stdbuf"})
_VALUE_FLAGS = frozenset({"-u", "-g", "-s", "-k", "-n", "-C", "-D"})  # wrapper options that take a value
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "fish"})
_FRONTDESK = {
    "submit": C.SCHED_SUBMIT,
    "run": C.SCHED_SUBMIT,
    "status": C.SCHED_QUERY,
    "queue": C.SCHED_QUERY,
    "wait": C.SCHED_QUERY,
    "cancel": C.SCHED_CANCEL,
}


def command_of(argv: Sequence[str]) -> list[str]:
    """The argv that does the work: wrappers looked through, a shell's `-c` text split."""
    args = list(argv)
    for _ in range(8):  # bounded: wrappers of wrappers
        if not args:
            return args
        name = os.path.basename(args[0])
        if name in _WRAPPERS:
            rest = args[1:]
            while rest and (rest[0].startswith("-") or "=" in rest[0] or rest[0].replace(".", "").isdigit()):
                rest = rest[2:] if rest[0] in _VALUE_FLAGS else rest[1:]
            args = rest
        elif name in _SHELLS and len(args) >= 3 and args[1] in ("-c", "-lc", "-ic"):
            try:
                args = shlex.split(args[2].split("&&")[0].split(";")[0].split("|")[0])
            except ValueError:
                return []
        else:
            return args
    return args


def _flags(args: Sequence[str]) -> set[str]:
    out: set[str] = set()
    for a in args:
        if a.startswith("--"):
            out.add(a)
        elif a.startswith("-"):
            out.update(f"-{ch}" for ch in a[1:])
    return out


def _special(name: str, args: Sequence[str]) -> set[CommandClass]:
    flags, rest = _flags(args[1:]), list(args[1:])
    sub = next((a for a in rest if not a.startswith("-")), "")
    out: set[CommandClass] = set()
    if name == "rm" and ({"-r", "-R", "-f", "--recursive", "--force"} & flags):
        out.add(C.DESTRUCTIVE)
    if name.startswith("mkfs") or (name == "find" and "-delete" in rest):
        out.add(C.DESTRUCTIVE)
    if name == "dd" and any(a.startswith("of=/dev/") for a in rest):
        out.add(C.DESTRUCTIVE)
    if name == "git" and (
        (sub == "reset" and "--hard" in flags)
        or (sub == "clean" and "-f" in flags)
        or (sub == "push" and ({"-f", "--force"} & flags))
    ):
        out.add(C.DESTRUCTIVE)
    if name == "git" and sub in ("clone", "fetch", "pull"):
        out.add(C.FETCH)
    if name in ("grep", "egrep") and ({"-r", "-R", "--recursive"} & flags):
        out.add(C.TREE_WALK)
    if name == "ls" and "-R" in flags:
        out.add(C.TREE_WALK)
    if name in ("sed", "perl") and ("-i" in flags or any(a.startswith("-i") for a in rest)):
        out.add(C.FILE_EDIT)
    elif name == "sed":
        out.add(C.FILE_READ)
    if name in ("cargo", "go", "dotnet") and sub in ("build", "install", "test"):
        out.add(C.BUILD if sub != "install" else C.PACKAGE)
    if name.startswith("python") and len(rest) >= 2 and rest[0] == "-m" and rest[1] in ("pip", "venv", "conda"):
        out.add(C.PACKAGE)
    if name == "frontdesk" and sub in _FRONTDESK:
        out.add(_FRONTDESK[sub])
    if name == "rsync" and any(":" in a for a in rest):
        out.add(C.FETCH)
    return out


def classify(argv: Sequence[str]) -> tuple[CommandClass, ...]:
    """The classes of a command line (sorted; empty for anything uncounted)."""
    args = command_of(argv)
    if not args:
        return ()
    name = os.path.basename(args[0])
    found = set(_BY_NAME.get(name, ())) | _special(name, args)
    if name == "scontrol" and args[1:2] not in (["show"], ["-o"], []):
        found.discard(C.SCHED_QUERY)
    return tuple(sorted(found))
