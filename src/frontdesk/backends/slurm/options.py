"""sbatch's command-line options as a table (pure): which take a value, which frontdesk reads, which it refuses.

The `sbatch` shim splits a command line with it (so a script is never mistaken for an option's value), and
the Slurm plug-in validates a stored job's pass-through options with it before the backend hands them to
the real sbatch. Nothing here runs a command.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

__all__ = ["Kind", "OptionError", "SbatchOption", "lookup", "split_command_line", "validate_passthrough"]


class Kind(StrEnum):
    """What frontdesk does with one sbatch option."""

    SPEC = "spec"
    """Read into the job spec (resources, name, output files, environment...)."""
    CLIENT = "client"
    """Handled by the shim itself (--parsable, --wait, --quiet)."""
    PASS = "pass"
    """Handed unchanged to the real sbatch on the gateway (nodes, tasks, account, constraint...)."""
    INFO = "info"
    """Submits nothing (--help, --version, --test-only): the real sbatch answers."""
    REFUSED = "refused"
    """Would act with the gateway's privileges or outside this cluster (--uid, --priority, -M...)."""


class OptionError(ValueError):
    """An option sbatch does not know, one frontdesk refuses, or one missing its value."""


@dataclass(frozen=True)
class SbatchOption:
    """One option: its long name, short letter, whether it takes a value, and what frontdesk does with it."""

    name: str
    short: str | None
    value: str
    """"required", "optional" (only as --name=value) or "none"."""
    kind: Kind


_SPEC_OPTS = {
    "partition": "p",
    "cpus-per-task": "c",
    "mem": None,
    "time": "t",
    "gres": None,
    "gpus": "G",
    "job-name": "J",
    "chdir": "D",
    "wrap": None,
    "output": "o",
    "error": "e",
    "export": None,
}
_PASS_REQUIRED = {
    "account": "A",
    "acctg-freq": None,
    "array": "a",
    "begin": "b",
    "comment": None,
    "constraint": "C",
    "cluster-constraint": None,
    "core-spec": "S",
    "cores-per-socket": None,
    "cpu-freq": None,
    "cpus-per-gpu": None,
    "deadline": None,
    "delay-boot": None,
    "dependency": "d",
    "distribution": "m",
    "exclude": "x",
    "extra-node-info": "B",
    "gpu-bind": None,
    "gpu-freq": None,
    "gpus-per-node": None,
    "gpus-per-socket": None,
    "gpus-per-task": None,
    "gres-flags": None,
    "hint": None,
    "input": "i",
    "kill-on-invalid-dep": None,
    "licenses": "L",
    "mail-type": None,
    "mail-user": None,
    "mcs-label": None,
    "mem-bind": None,
    "mem-per-cpu": None,
    "mem-per-gpu": None,
    "mincpus": None,
    "network": None,
    "nodelist": "w",
    "nodes": "N",
    "ntasks": "n",
    "ntasks-per-core": None,
    "ntasks-per-gpu": None,
    "ntasks-per-node": None,
    "ntasks-per-socket": None,
    "open-mode": None,
    "prefer": None,
    "profile": None,
    "qos": "q",
    "reservation": None,
    "signal": None,
    "sockets-per-node": None,
    "switches": None,
    "thread-spec": None,
    "threads-per-core": None,
    "time-min": None,
    "tmp": None,
    "wckey": None,
    "power": None,
}
_PASS_OPTIONAL = ("exclusive", "nice", "propagate", "no-kill")
_PASS_FLAGS = {
    "contiguous": None,
    "hold": "H",
    "no-requeue": None,
    "overcommit": "O",
    "oversubscribe": "s",
    "requeue": None,
    "spread-job": None,
    "use-min-nodes": None,
    "ignore-pbs": None,
    "verbose": "v",
}
_CLIENT_FLAGS = {"parsable": None, "quiet": "Q", "wait": "W"}
_INFO_FLAGS = {"help": "h", "usage": "u", "version": "V", "test-only": None}
_REFUSED = {
    "uid": ("required", None),
    "gid": ("required", None),
    "priority": ("required", None),
    "clusters": ("required", "M"),
    "export-file": ("required", None),
    "nodefile": ("required", "F"),
    "batch": ("required", None),
    "bb": ("required", None),
    "bbf": ("required", None),
    "container": ("required", None),
    "get-user-env": ("optional", None),
    "reboot": ("none", None),
}
"""Options sbatch takes from operators only, or that act outside this cluster: a root gateway's `sbatch --uid=U`
is an operator's request to slurmctld (so is `--nice` below zero, refused in validate_passthrough)."""


def _table() -> dict[str, SbatchOption]:
    out: dict[str, SbatchOption] = {}

    def add(names: dict[str, str | None], value: str, kind: Kind) -> None:
        for name, short in names.items():
            out[name] = SbatchOption(name, short, value, kind)

    add(_SPEC_OPTS, "required", Kind.SPEC)
    add(_PASS_REQUIRED, "required", Kind.PASS)
    add(dict.fromkeys(_PASS_OPTIONAL), "optional", Kind.PASS)
    add(_PASS_FLAGS, "none", Kind.PASS)
    add(_CLIENT_FLAGS, "none", Kind.CLIENT)
    add(_INFO_FLAGS, "none", Kind.INFO)
    for name, (value, short) in _REFUSED.items():
        out[name] = SbatchOption(name, short, value, Kind.REFUSED)
    return out


OPTIONS = _table()
_SHORT = {o.short: o for o in OPTIONS.values() if o.short}


def lookup(arg: str) -> tuple[SbatchOption, str | None, bool]:
    """(option, value given inline or None, whether the next argument is its value) for one `-x`/`--xx` arg."""
    if arg.startswith("--"):
        name, eq, inline = arg[2:].partition("=")
        opt = OPTIONS.get(name)
        if opt is None:
            raise OptionError(f"unrecognized option '{arg}'")
        if opt.value == "none" and eq:
            raise OptionError(f"option '--{name}' doesn't allow an argument")
        if eq:
            return opt, inline, False
        return opt, None, opt.value == "required"
    letter, inline = arg[1:2], arg[2:]
    sopt = _SHORT.get(letter)
    if sopt is None:
        raise OptionError(f"invalid option -- '{letter}'")
    if sopt.value == "none":
        if inline:
            raise OptionError(f"frontdesk reads one short flag per argument: {arg!r}")
        return sopt, None, False
    return sopt, (inline or None), not inline


def split_command_line(argv: Sequence[str]) -> tuple[list[tuple[SbatchOption, str | None]], list[str]]:
    """([(option, value)...], [script, script args...]) as sbatch splits its arguments."""
    opts: list[tuple[SbatchOption, str | None]] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return opts, list(argv[i + 1 :])
        if not arg.startswith("-") or arg == "-":
            break
        opt, value, takes_next = lookup(arg)
        if takes_next:
            if i + 1 >= len(argv):
                raise OptionError(f"option '{arg}' requires an argument")
            i += 1
            value = argv[i]
        opts.append((opt, value))
        i += 1
    return opts, list(argv[i:])


def validate_passthrough(options: Sequence[str]) -> list[str]:
    """Check stored pass-through options (each `--name[=value]`); the list as given, or OptionError."""
    for item in options:
        if not item.startswith("--") or "\n" in item or "\r" in item:
            raise OptionError(f"not a long sbatch option: {item!r}")
        opt, value, takes_next = lookup(item)
        if opt.kind is not Kind.PASS:
            raise OptionError(f"--{opt.name} cannot be passed through to sbatch ({opt.kind.value})")
        if takes_next or (opt.value == "required" and not value):
            raise OptionError(f"--{opt.name} needs a value: --{opt.name}=VALUE")
        if opt.name == "nice" and value and value.strip().startswith("-"):
            raise OptionError(
                f"--nice={value}: a negative nice is an operator's (Slurm refuses it to users; the gateway"
                " submits as root, so it would be granted)"
            )
    return list(options)
