"""Build a `GuardContext` from frontdesk.toml's `[guard]` table and the process environment.

[guard]
node_role = "login"                 # login | compute | workstation; FRONTDESK_NODE_ROLE overrides;
                                    # `compute` inside a Slurm job (SLURM_JOB_ID set)
login_hosts = ["login*"]            # or: the role from the host name (fnmatch patterns)
compute_hosts = ["node*", "gpu*"]
scratch_roots = ["/scratch"]        # $SCRATCH is added when set
home_roots = ["/home"]
shared_paths = ["/project", "/datasets"]
project_roots = ["~/code/thesis"]   # deleting one of these (or the cwd, or above it) asks
gpus_managed = true                 # frontdesk hands out this machine's GPUs (default: [local] gpus > 0)
rules_files = ["site-rules.toml"]   # extra rules (same format as guard/rules.toml); `rules_file` too
disable = ["priv.sudo"]             # rule ids switched off
scan_scripts = true                 # read scripts a command runs (bash x.sh, python x.py)
ask_blocks_jobs = false             # gateway: an `ask` on a job refuses it instead of warning
[guard.actions]                     # change a rule's action: allow | ask | deny
"git.destructive" = "deny"
[guard.partitions.debug]            # what each partition is for
purpose = "test"                    # test | debug | interactive | production
max_time = "00:30:00"
max_nodes = 2
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from frontdesk.config import TableKeys, nearest
from frontdesk.errors import ConfigError
from frontdesk.guard.model import GuardContext, NodeRole, Partition

__all__ = [
    "GUARD_KEYS",
    "node_role",
    "node_role_and_source",
    "context_from_settings",
    "guard_section",
    "read_text_file",
    "process_info",
]
_TAG_VAR = "FRONTDESK_ATTEMPT_TAG"  # set in every job process by the embedded backend (backends/tracking.py)

_MAX_READ = 256 * 1024

GUARD_KEYS = TableKeys.of(
    "guard",
    "node_role login_hosts compute_hosts scratch_roots home_roots shared_paths project_roots gpus_managed"
    " rules_files rules_file disable scan_scripts actions partitions enabled ask_blocks_jobs",
    named={"actions": None, "partitions": TableKeys.of("guard.partitions", "purpose max_time max_nodes")},
)
"""`[guard]` as this module (and guard/plugin.py: enabled, ask_blocks_jobs) reads it; the docstring above."""


def guard_section(settings: Any) -> dict[str, Any]:
    """The raw `[guard]` table (empty without settings)."""
    return dict(settings.section("guard")) if settings is not None else {}


def node_role(section: Mapping[str, Any], environ: Mapping[str, str]) -> NodeRole:
    """Where this runs: FRONTDESK_NODE_ROLE, else compute inside a Slurm job, else the site setting."""
    return node_role_and_source(section, environ)[0]


def node_role_and_source(
    section: Mapping[str, Any], environ: Mapping[str, str], hostname: str | None = None
) -> tuple[NodeRole, str]:
    """The node role and what said so: FRONTDESK_NODE_ROLE, SLURM_JOB_ID (compute), [guard] node_role,
    [guard] login_hosts / compute_hosts patterns against the host name, or "default" (workstation)."""
    import fnmatch

    raw: Any = None
    source = "default"
    if environ.get("FRONTDESK_NODE_ROLE"):
        raw, source = environ["FRONTDESK_NODE_ROLE"], "FRONTDESK_NODE_ROLE"
    elif environ.get("SLURM_JOB_ID"):
        raw, source = "compute", "SLURM_JOB_ID"
    elif section.get("node_role"):
        raw, source = section["node_role"], "[guard] node_role"
    else:
        if hostname is None:
            import socket

            hostname = socket.gethostname()
        for role, key in (("login", "login_hosts"), ("compute", "compute_hosts")):
            patterns = _paths(section.get(key), key, expand=False)
            if any(fnmatch.fnmatch(hostname, p) for p in patterns):
                raw, source = role, f"[guard] {key}"
                break
    try:
        return NodeRole(str(raw or "workstation").strip().lower()), source
    except ValueError:
        raise ConfigError(f"node role must be login, compute or workstation, got {raw!r}") from None


_READ = (stat.S_IRUSR, stat.S_IRGRP, stat.S_IROTH)
_SEARCH = (stat.S_IXUSR, stat.S_IXGRP, stat.S_IXOTH)


def _may(st: os.stat_result, uid: int, gids: set[int], bits: tuple[int, int, int]) -> bool:
    """Whether `uid` (in `gids`) has the owner, group or other one of `bits` on a file with this status."""
    if st.st_uid == uid:
        return bool(st.st_mode & bits[0])
    return bool(st.st_mode & (bits[1] if st.st_gid in gids else bits[2]))


def _gids(uid: int) -> set[int]:
    import pwd

    try:
        user = pwd.getpwuid(uid)
        return set(os.getgrouplist(user.pw_name, user.pw_gid))
    except KeyError:
        return set()


def _reachable(path: str, uid: int, gids: set[int]) -> bool:
    """Whether `uid` may search every directory above the absolute `path`."""
    parts = path.split("/")
    return all(_may(os.stat("/".join(parts[:i]) or "/"), uid, gids, _SEARCH) for i in range(1, len(parts)))


def _open_for(path: str, uid: int | None) -> int | None:
    """A descriptor of `path` opened for reading when it is a regular file `uid` could read (None otherwise).

    Taken with O_PATH first, which opens nothing: opening a FIFO or a device is an action of its own (a blocked
    writer is let go, a watchdog arms). A root gateway reading for another `uid` checks that user's rights on the
    file and on every directory above it, as named and as resolved (a world-readable script in alice's 0700
    directory is not bob's to read), and that the file it opened is the one it checked."""
    who = uid if uid not in (None, 0) and os.geteuid() == 0 else None
    real = path if who is None else os.path.realpath(path)
    gids = set() if who is None else _gids(who)
    checked = None
    if who is not None:
        if not (_reachable(os.path.abspath(path), who, gids) and _reachable(real, who, gids)):
            return None
        checked = os.stat(real)
    where = os.open(real, os.O_PATH | os.O_CLOEXEC | (0 if who is None else os.O_NOFOLLOW))
    try:
        st = os.fstat(where)
        if not stat.S_ISREG(st.st_mode):
            return None
        if who is not None and checked is not None:
            if (st.st_dev, st.st_ino) != (checked.st_dev, checked.st_ino) or not _may(st, who, gids, _READ):
                return None
        return os.open(f"/proc/self/fd/{where}", os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    finally:
        os.close(where)


def read_text_file(path: str, uid: int | None = None) -> str | None:
    """The start of a text file, or None when it is missing, unreadable, binary or no regular file (a FIFO
    would block the gateway). Read by root for another `uid`, only a file that user could read (`_open_for`)."""
    try:
        fd = _open_for(path, uid)
        if fd is None:
            return None
        with os.fdopen(fd, "rb") as fh:
            data = fh.read(_MAX_READ)
    except OSError:
        return None
    if b"\0" in data[:4096]:
        return None
    return data.decode("utf-8", "replace")


def process_info(pid: int, my_tag: str | None = None, my_uid: int | None = None) -> str | None:
    """Whom a live pid belongs to, when it is not ours to kill: a frontdesk job's process (every job process
    carries FRONTDESK_ATTEMPT_TAG; our own job's tag is ours), or another user's. None otherwise.

    `my_uid` is whose check it is: a root gateway judges a submission as its submitter would see it (another
    user's process by its owner alone, as `ps` shows it: its environment, which names its job, is its owner's)."""
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8", errors="replace") as fh:
            status = fh.read(4096)
    except OSError:
        return None
    uid_line = next((line for line in status.splitlines() if line.startswith("Uid:")), "Uid:\t-1")
    uid = int(uid_line.split()[1])
    me = os.getuid() if my_uid is None else my_uid
    if uid >= 0 and uid != me and me != 0:  # what `ps` shows anyone; its environment is its owner's to read
        return f"pid {pid} belongs to {_user_name(uid)}"
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            raw = fh.read(256 * 1024)
    except OSError:
        raw = b""
    env = dict(item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    tag = env.get(_TAG_VAR.encode(), b"").decode("utf-8", "replace")
    if tag and tag != my_tag:
        job = env.get(b"FRONTDESK_JOB_ID", b"").decode("utf-8", "replace") or tag
        return f"pid {pid} runs frontdesk job {job}"
    if uid >= 0 and uid != me:
        return f"pid {pid} belongs to {_user_name(uid)}"
    return None


def _user_name(uid: int) -> str:
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def _known_keys(section: Mapping[str, Any]) -> None:
    """A misspelt `[guard]` key (or `[guard.partitions.X]` key) refuses every check in one line (the hook asks,
    naming it) instead of running without that setting: the CLI and hooks check without a gateway's start."""
    parts = section.get("partitions")
    tables = [("[guard]", section, GUARD_KEYS)] + [
        (f"[guard.partitions.{name}]", spec, GUARD_KEYS.named["partitions"])
        for name, spec in (parts.items() if isinstance(parts, Mapping) else ())
        if isinstance(spec, Mapping)
    ]
    for where, table, known in tables:
        if known is not None and (unknown := sorted(set(table) - known.keys)):
            near = nearest(unknown[0], known.keys)
            raise ConfigError(f"{where} {unknown[0]} is not a setting: did you mean {near}?")


def _partitions(raw: Any) -> dict[str, Partition]:
    from frontdesk.guard.sitechecks import walltime_s

    out: dict[str, Partition] = {}
    if not isinstance(raw, Mapping):
        return out
    for name, spec in raw.items():
        if not isinstance(spec, Mapping):
            raise ConfigError(f"[guard.partitions.{name}] must be a table")
        max_time = spec.get("max_time")
        seconds = walltime_s(str(max_time)) if max_time is not None else None
        if max_time is not None and seconds is None:
            raise ConfigError(f"[guard.partitions.{name}].max_time: cannot read {max_time!r}")
        out[str(name)] = Partition(
            str(name),
            str(spec.get("purpose", "production")),
            seconds,
            int(spec["max_nodes"]) if "max_nodes" in spec else None,
        )
    return out


def _paths(value: Any, name: str, expand: bool = True) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise ConfigError(f"[guard].{name} must be a list of {'paths' if expand else 'patterns'}")
    if not expand:
        return tuple(str(v) for v in value)
    return tuple(os.path.normpath(os.path.expanduser(str(v))) for v in value)


def _gpus_managed(section: Mapping[str, Any], settings: Any) -> bool:
    value = section.get("gpus_managed")
    if value is None:
        return bool(settings is not None and getattr(settings, "local_gpus", None))
    if not isinstance(value, bool):
        raise ConfigError("[guard].gpus_managed must be true or false")
    return value


def _protected_files(settings: Any, rule_files: list[str]) -> tuple[str, ...]:
    """Files an agent must not edit: frontdesk's config and the guard's rule files."""
    out = [os.path.normpath(f) for f in rule_files]
    if settings is not None and getattr(settings, "config_file", None):
        out.append(os.path.normpath(str(settings.config_file)))
    return tuple(out)


def context_from_settings(
    settings: Any = None,
    environ: Mapping[str, str] | None = None,
    cwd: str | None = None,
    with_taint: bool = True,
) -> GuardContext:
    """The context for checks run by this process (CLI, hook) or by the gateway for a submitter."""
    from frontdesk.guard.rules import load_rules

    env = dict(os.environ if environ is None else environ)
    section = guard_section(settings)
    _known_keys(section)
    base = Path(settings.config_file).parent if settings is not None and settings.config_file else Path.cwd()
    files = list(_paths(section.get("rules_files"), "rules_files")) + list(
        _paths(section.get("rules_file"), "rules_file")
    )
    files = [str(base / f) if not os.path.isabs(f) else f for f in files]
    disable = section.get("disable", [])
    actions = section.get("actions", {})
    try:
        rules = load_rules(files, disable, actions) if (files or disable or actions) else None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"[guard] rules: {exc}") from None
    scratch = _paths(section.get("scratch_roots", ["/scratch"]), "scratch_roots")
    if env.get("SCRATCH"):
        scratch += (os.path.normpath(env["SCRATCH"]),)
    home = env.get("HOME") or os.path.expanduser("~")
    role, role_source = node_role_and_source(section, env)
    ctx = GuardContext(
        node_role=role,
        role_source=role_source,
        project_roots=_paths(section.get("project_roots"), "project_roots"),
        gpus_managed=_gpus_managed(section, settings),
        protected_files=_protected_files(settings, files),
        env=env,
        cwd=cwd or os.getcwd(),
        home=home,
        scratch_roots=scratch,
        home_roots=_paths(section.get("home_roots", ["/home"]), "home_roots"),
        shared_paths=_paths(section.get("shared_paths"), "shared_paths"),
        partitions=_partitions(section.get("partitions")),
        read_file=read_text_file,
        scan_scripts=bool(section.get("scan_scripts", True)),
        rules=rules,
    )
    my_tag = env.get(_TAG_VAR)
    ctx.process_info = lambda pid: process_info(pid, my_tag)
    if with_taint and settings is not None:
        from frontdesk.guard.taint import TaintStore

        store = TaintStore.open(settings.home)
        ctx.tainted = store.source_of
        ctx.taint_text = store.text_source
    return ctx
