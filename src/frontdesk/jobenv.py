"""A job's environment: the submitter's, captured by the client, filtered by a site list; never the gateway's.

Like `sbatch --export=ALL`, the client sends its whole environment with each submission (`context.env`),
less frontdesk's own credentials (CLIENT_DROP). The gateway is where the policy lives: before it stores a
job it drops every variable matching the built-in denylist (DEFAULT_DENY: tokens, secrets, passwords, keys)
or the site's `[env] deny`; the site's `[env] allow` and the submitter's own `FRONTDESK_ENV_ALLOW`
(comma-separated patterns) exempt names from the built-in list, never from the site's. What is dropped is
never stored, logged or passed on. Backends start from `login_env` (what a login of the submitting user
gives: HOME, USER, SHELL, a default PATH) and lay the stored environment over it; the gateway's own
environment reaches no job. Stdlib only and no `re`/`fnmatch`: every client imports it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

__all__ = [
    "SITE_KEYS",
    "CLIENT_DROP",
    "DEFAULT_DENY",
    "MAX_ENV_BYTES",
    "UMASK_VAR",
    "USER_ALLOW_VAR",
    "capture_env",
    "filter_env",
    "login_env",
    "matches",
    "shepherd_env",
    "site_filter",
]

DEFAULT_DENY: tuple[str, ...] = (
    "FRONTDESK_TOKEN",
    "*TOKEN*",
    "*SECRET*",
    "*PASSWORD*",
    "*PASSWD*",
    "*_API_KEY",
    "*_ACCESS_KEY*",
    "*PRIVATE_KEY*",
    "*CREDENTIAL*",
    "PWD",
    "OLDPWD",
    "SHLVL",
    "_",
)
"""Names (with `*` wildcards, case-sensitive) that never travel into a job unless the site allows them.

Secrets by the usual naming conventions (tokens, secrets, passwords, API and access keys, credentials),
plus the shell's per-process bookkeeping, which means nothing in another process.
"""

CLIENT_DROP: tuple[str, ...] = ("FRONTDESK_TOKEN", "FRONTDESK_TOKENS_FILE", "CLAUDE_CODE_MESSAGING_TOKEN")
"""frontdesk's own credentials: a client never sends them as part of a job's environment."""

USER_ALLOW_VAR = "FRONTDESK_ENV_ALLOW"
"""In the submitter's environment: comma-separated names or patterns they want their jobs to see anyway."""

UMASK_VAR = "FRONTDESK_UMASK"
"""Set by every client to its own umask (octal, `0077`), as sbatch sets SLURM_UMASK: a root gateway's job then
makes its files as its submitter's shell would (`runas.umask_of`), never with the gateway's umask."""

MAX_ENV_BYTES = 1 << 20
"""The most a submitted environment may weigh (names plus values); more is refused, not truncated."""

_DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"


def matches(name: str, pattern: str) -> bool:
    """Whether `name` matches a pattern where `*` stands for any run of characters (nothing else is special)."""
    parts = pattern.split("*")
    if len(parts) == 1:
        return name == pattern
    first, last = parts[0], parts[-1]
    if not name.startswith(first) or len(name) < len(first) + len(last) or not name.endswith(last):
        return False
    pos, end = len(first), len(name) - len(last)
    for middle in parts[1:-1]:
        found = name.find(middle, pos, end)
        if found < 0:
            return False
        pos = found + len(middle)
    return True


def filter_env(
    env: Mapping[str, str],
    deny: Iterable[str] = DEFAULT_DENY,
    allow: Iterable[str] = (),
    site_deny: Iterable[str] = (),
) -> dict[str, str]:
    """The variables of `env` to keep: none matching `site_deny`; of the rest, those matching `allow` or no `deny`."""
    lists = (tuple(deny), tuple(allow), tuple(site_deny))
    names = tuple(env)
    dropped = _DROPPED.get((lists, names))  # the same names come with every submission of a session
    if dropped is not None:
        copy = dict(env)
        for name in dropped:
            del copy[name]
        return copy
    kept = _KEPT.get(lists)
    if kept is None:
        if len(_KEPT) >= 64:  # a few distinct lists per gateway (FRONTDESK_ENV_ALLOW varies by user)
            _KEPT.clear()
        kept = _KEPT[lists] = {}
    out: dict[str, str] = {}
    for k, v in env.items():
        keep = kept.get(k)
        if keep is None:
            keep = _keep(k, *lists)
            if len(kept) < 4096:  # the same few hundred names come with every submission
                kept[k] = keep
        if keep:
            out[k] = v
    if len(names) <= _DROPPED_NAMES and sum(map(len, names)) <= _DROPPED_CHARS:
        if len(_DROPPED) >= 64:
            _DROPPED.clear()
        _DROPPED[(lists, names)] = tuple(k for k in names if k not in out)
    return out


_KEPT: dict[tuple[tuple[str, ...], ...], dict[str, bool]] = {}
"""(deny, allow, site_deny) -> name -> kept: a gateway sees the same names with every submission."""

_DROPPED: dict[tuple[tuple[tuple[str, ...], ...], tuple[str, ...]], tuple[str, ...]] = {}
"""((deny, allow, site_deny), every name of an environment in order) -> the names dropped from it: a client sends
the same names each time, so a submission copies its environment and deletes a few, without a loop over it."""
_DROPPED_NAMES = 1024
_DROPPED_CHARS = 32 * 1024
"""Environments with more names, or longer names in all, are not remembered (64 at most are)."""


def _keep(name: str, deny: tuple[str, ...], allow: tuple[str, ...], site_deny: tuple[str, ...]) -> bool:
    if any(matches(name, d) for d in site_deny):
        return False
    return any(matches(name, a) for a in allow) or not any(matches(name, d) for d in deny)


def capture_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """What a client sends as `context.env`: its whole environment less frontdesk's own credentials."""
    env = os.environ if environ is None else environ
    out = {k: v for k, v in env.items() if k not in CLIENT_DROP}
    mask = _own_umask()
    if mask is not None:  # always this process's: a value inherited from a job's environment may be stale
        out[UMASK_VAR] = f"{mask:04o}"
    return out


def _own_umask() -> int | None:
    """This process's umask, read without changing it (os.umask would, for a moment, in every thread)."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return None


def _check(env: Mapping[str, object]) -> dict[str, str]:
    flat = _flat(env)
    if flat is not None:  # the common case, checked in C: strings, no '=' or NUL in a name, no NUL in a value
        names, values = flat
        if "" not in env and "=" not in names and "\0" not in names and "\0" not in values:
            size = len(names) + len(values) + 2 * len(env)
            if size <= MAX_ENV_BYTES:
                return dict(env)  # type: ignore[arg-type]  # every key and value is a str (joined above)
    from frontdesk.errors import UserError

    out: dict[str, str] = {}
    size = 0
    for key, value in env.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise UserError(f"context.env: names and values must be strings (got {key!r})")
        if not key or "=" in key or "\0" in key or "\0" in value:
            raise UserError(f"context.env: not an environment variable: {key[:64]!r}")
        size += len(key) + len(value) + 2
        out[key] = value
    if size > MAX_ENV_BYTES:
        raise UserError(f"context.env: {size} bytes, more than the {MAX_ENV_BYTES} allowed")
    return out


def _flat(env: Mapping[str, object]) -> tuple[str, str] | None:
    """Every name joined, every value joined; None when one of them is not a string."""
    try:
        return "".join(env), "".join(env.values())  # type: ignore[arg-type]  # a TypeError says not all str
    except TypeError:
        return None


SITE_KEYS = ("deny", "allow")
"""The keys of frontdesk.toml's `[env]` (a plain tuple: this module imports nothing of frontdesk's)."""


def site_filter(env: Mapping[str, object], section: Mapping[str, object]) -> dict[str, str]:
    """The gateway's filter: validate a submitted environment, then apply the built-in and the site's lists.

    `section` is frontdesk.toml's `[env]`: `deny` drops more names (always), `allow` exempts names from
    the built-in denylist (a site that wants jobs to see, say, `HF_TOKEN` lists it there), as does the
    submitter's own FRONTDESK_ENV_ALLOW.
    """
    lists = {key: _site_list(section, key) for key in SITE_KEYS}
    checked = _check(env)
    own = checked.get(USER_ALLOW_VAR)
    mine = tuple(p.strip() for p in own.split(",") if p.strip()) if own else ()
    return filter_env(checked, DEFAULT_DENY, lists["allow"] + mine, lists["deny"] + CLIENT_DROP)


def _site_list(section: Mapping[str, object], key: str) -> tuple[str, ...]:
    if key not in section:
        return ()
    raw = section[key]
    if raw == []:
        return ()
    if not isinstance(raw, list) or not all(isinstance(p, str) and p for p in raw):
        from frontdesk.errors import ConfigError

        raise ConfigError(f"[env] {key} must be a list of variable names or patterns")
    return tuple(raw)


def login_env(name: str, home: str, shell: str) -> dict[str, str]:
    """What a login of this user gives before the submitted environment is laid over it."""
    return {"HOME": home, "USER": name, "LOGNAME": name, "SHELL": shell or "/bin/sh", "PATH": _DEFAULT_PATH}


_SHEPHERD_KEEP = ("PATH", "PYTHONPATH", "PYTHONHOME", "LANG", "LC_ALL", "TZ")


def shepherd_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The shepherd's own environment: what Python and its FRONTDESK_* switches need, no gateway secrets."""
    env = os.environ if environ is None else environ
    kept = {k: v for k, v in env.items() if k in _SHEPHERD_KEEP or k.startswith("FRONTDESK_")}
    return filter_env(kept)
