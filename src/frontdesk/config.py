"""Settings, loaded once at the edge: defaults < frontdesk.toml < FRONTDESK_* environment < flags.

Stdlib only (tomllib, dataclasses): the thin CLI imports this on every call.
Sections other than `[gateway]`/`[local]` (policy, guard, memory, agents, slurm) are kept raw in
`Settings.sections` and validated by the module that owns them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from frontdesk.errors import ConfigError
from frontdesk.paths import (
    FACILITY_HOME,
    FACILITY_SOCKET,
    _default_runtime_dir,
    default_home,
    site_config_path,
    socket_path_from_env,
)

__all__ = [
    "GATEWAY_KEYS",
    "LOCAL_KEYS",
    "Settings",
    "TableKeys",
    "load_settings",
    "nearest",
    "default_home",
    "socket_path_from_env",
]


@dataclass(frozen=True)
class TableKeys:
    """The keys one reader of a frontdesk.toml table takes, declared next to its parser; `frontdesk serve`
    checks every table against the union of its readers' declarations (configcheck.py)."""

    table: str
    keys: frozenset[str]
    nested: Mapping[str, TableKeys] = field(default_factory=dict)
    """Keys whose value is a table of fixed keys (`[policy.suspend]`), or a list of such (`[[storage.forward]]`)."""
    named: Mapping[str, TableKeys | None] = field(default_factory=dict)
    """Keys whose value maps names the site chooses (`[access.labs]`) to values, or to tables of fixed keys
    (`[guard.partitions.NAME]`); None: any value."""

    @staticmethod
    def of(table: str, keys: str | Any, **kw: Any) -> TableKeys:
        """From a space-separated string or any iterable of names (a dataclass's fields)."""
        return TableKeys(table, frozenset(keys.split() if isinstance(keys, str) else keys), **kw)


@dataclass(frozen=True)
class Settings:
    """Every setting the gateway and its clients read."""

    home: Path
    runtime_dir: Path
    socket: Path
    config_file: Path | None = None
    mode: str = "user"
    """"user" (one user's gateway, socket 0600) or "facility" (one gateway for all, identity from the kernel)."""
    backend: str = "local"
    listen: str | None = None
    token: str | None = None
    tls_cert: str | None = None
    """PEM certificate (chain) of the TCP listener; with `tls_key`, `listen` speaks TLS only (frontdesk.tls)."""
    tls_key: str | None = None
    tls_ca: str | None = None
    """The CA bundle clients check the gateway's certificate with (None: the system's store)."""
    tick_seconds: float = 1.0
    report_max_bytes: int = 2048
    local_cpus: int | None = None
    local_memory: str | None = None
    local_gpus: int | None = None
    sections: dict[str, Any] = field(default_factory=dict)

    @property
    def db_path(self) -> Path:
        """The SQLite database file."""
        return self.home / "frontdesk.db"

    @property
    def jobs_dir(self) -> Path:
        """Where each job's files (script, logs, shepherd state) live."""
        return self.home / "jobs"

    def section(self, name: str) -> dict[str, Any]:
        """A raw `[name]` table from frontdesk.toml (empty when absent)."""
        value = self.sections.get(name, {})
        return value if isinstance(value, dict) else {}


_ENV_KEYS: dict[str, tuple[str, type]] = {
    "FRONTDESK_BACKEND": ("backend", str),
    "FRONTDESK_MODE": ("mode", str),
    "FRONTDESK_LISTEN": ("listen", str),
    "FRONTDESK_TOKEN": ("token", str),
    "FRONTDESK_TLS_CERT": ("tls_cert", str),
    "FRONTDESK_TLS_KEY": ("tls_key", str),
    "FRONTDESK_TLS_CA": ("tls_ca", str),
    "FRONTDESK_TICK": ("tick_seconds", float),
    "FRONTDESK_LOCAL_CPUS": ("local_cpus", int),
    "FRONTDESK_LOCAL_MEMORY": ("local_memory", str),
    "FRONTDESK_LOCAL_GPUS": ("local_gpus", int),
}

_TOML_KEYS: dict[str, tuple[str, str, type]] = {
    "backend": ("gateway", "backend", str),
    "mode": ("gateway", "mode", str),
    "listen": ("gateway", "listen", str),
    "token": ("gateway", "token", str),
    "tls_cert": ("gateway", "tls_cert", str),
    "tls_key": ("gateway", "tls_key", str),
    "tls_ca": ("gateway", "tls_ca", str),
    "tick_seconds": ("gateway", "tick_seconds", float),
    "report_max_bytes": ("gateway", "report_max_bytes", int),
    "local_cpus": ("local", "cpus", int),
    "local_memory": ("local", "memory", str),
    "local_gpus": ("local", "gpus", int),
}


GATEWAY_KEYS = TableKeys.of(
    "gateway",
    {name for table, name, _ in _TOML_KEYS.values() if table == "gateway"}
    # read raw by: config._socket, paths (service_user), server (insecure_plaintext, munge), api/auth (tokens,
    # tokens_file, munge), api/app and api/limits (fast_submit, fast_wait, max_body_bytes), plugins, client (url)
    | set("socket service_user insecure_plaintext tokens tokens_file munge fast_submit fast_wait".split())
    | set("max_body_bytes plugins url".split()),
    named={"tokens": None},
)
LOCAL_KEYS = TableKeys.of(
    "local",
    {name for table, name, _ in _TOML_KEYS.values() if table == "local"}
    # read raw by backends/local (output_max_bytes), core/attempt (landlock*), backends/localgpu (mps*)
    | set("output_max_bytes landlock landlock_writable mps mps_pipe_directory".split()),
)


def nearest(name: str, known: Any) -> str | None:
    """The known name nearest to `name` (difflib's ratio), None when nothing is known."""
    import difflib

    found = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.0)
    return found[0] if found else None


def file_problem(path: str | Path) -> str | None:
    """What keeps `path` from being read as a regular file ("no such file", "not a regular file (a FIFO)"), or None."""
    import stat

    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "no such file"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if stat.S_ISREG(mode):
        return None
    kinds = [(stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device")]
    kinds += [(stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")]
    kind = next((name for test, name in kinds if test(mode)), "a special file")
    return f"not a regular file ({kind})"


def _find_config(explicit: str | Path | None, home: Path) -> Path | None:
    if explicit:
        path = Path(explicit)
        if problem := file_problem(path):
            raise ConfigError(f"config file {path}: {problem}")
        return path
    env = os.environ.get("FRONTDESK_CONFIG")
    if env:
        if problem := file_problem(env):
            raise ConfigError(f"FRONTDESK_CONFIG {env}: {problem}")
        return Path(env)
    for candidate in (home / "frontdesk.toml", Path.home() / ".config" / "frontdesk" / "frontdesk.toml"):
        if candidate.is_file():
            return candidate
    return None


def _coerce(value: Any, typ: type, where: str) -> Any:
    if typ is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if typ in (int, float) and isinstance(value, str) and (not value.isascii() or "_" in value):
        # int() and float() take other scripts' digits and 1_000: an operator's typo, not a number
        raise ConfigError(f"{where}: expected {typ.__name__}, got {value!r}")
    if typ is int and isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    if typ is float and isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    if not isinstance(value, typ) or isinstance(value, bool):
        raise ConfigError(f"{where}: expected {typ.__name__}, got {value!r}")
    return value


def read_toml(path: Path) -> dict[str, Any]:
    """Parse a frontdesk.toml, turning syntax errors into one-line ConfigErrors."""
    import tomllib  # only when a config file exists: clients on the hot path rarely need it

    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror}") from None


def _holds_tokens(data: dict[str, Any]) -> bool:
    gw = data.get("gateway", {})
    return isinstance(gw, dict) and bool(gw.get("token") or gw.get("tokens"))


def _read_checked(path: Path) -> dict[str, Any]:
    """Read a config file; one that holds tokens must be 0600 (or stricter) and ours, else it is refused."""
    data = read_toml(path)
    if _holds_tokens(data):
        from frontdesk.identity import check_private_file

        check_private_file(path, "config file")
    return data


def _merged(site: dict[str, Any], own: dict[str, Any]) -> dict[str, Any]:
    out = dict(site)
    for key, value in own.items():
        base = out.get(key)
        out[key] = {**base, **value} if isinstance(base, dict) and isinstance(value, dict) else value
    return out


def load_settings(config: str | Path | None = None, **flags: Any) -> Settings:
    """Build Settings from defaults, the site's and the user's config files, FRONTDESK_* variables and flags."""
    home = default_home()
    runtime = _default_runtime_dir(home)
    values: dict[str, Any] = {}
    path = _find_config(config, home)
    site = site_config_path()
    data = _merged(_read_checked(site) if site else {}, _read_checked(path) if path else {})
    sections: dict[str, Any] = data
    if data:
        for key, (table, name, typ) in _TOML_KEYS.items():
            tbl = data.get(table, {})
            if isinstance(tbl, dict) and name in tbl:
                values[key] = _coerce(tbl[name], typ, f"{path}: [{table}].{name}")
    for env, (key, typ) in _ENV_KEYS.items():
        if os.environ.get(env):
            values[key] = _coerce(os.environ[env], typ, env)
    values.update({k: v for k, v in flags.items() if v is not None})
    _check_ranges(values)
    if values.get("backend", "local") not in ("local", "slurm"):
        raise ConfigError(f"backend must be 'local' or 'slurm', got {values['backend']!r}")
    if values.get("mode", "user") not in ("user", "facility"):
        raise ConfigError(f"[gateway] mode must be 'user' or 'facility', got {values['mode']!r}")
    sock = _socket(values.get("mode", "user"), data, runtime)
    if values.get("mode") == "facility" and not os.environ.get("FRONTDESK_HOME"):
        home = FACILITY_HOME  # not root's ~/.local/state: the facility's state is the system's
    settings = Settings(home=home, runtime_dir=sock.parent, socket=sock, config_file=path, sections=sections)
    return replace(settings, **values)


_RANGES: dict[str, tuple[float, float, str]] = {
    "tick_seconds": (0.05, 3600.0, "[gateway] tick_seconds (FRONTDESK_TICK)"),
    "report_max_bytes": (256, 1 << 20, "[gateway] report_max_bytes"),
    "local_cpus": (1, 1 << 20, "[local] cpus (FRONTDESK_LOCAL_CPUS)"),
    "local_gpus": (0, 4096, "[local] gpus (FRONTDESK_LOCAL_GPUS)"),
}
"""Numbers a setting may take: `tick_seconds = 0` (or -1) made the gateway's tick a busy loop, nan or inf one
that never ran."""


def _check_ranges(values: dict[str, Any]) -> None:
    import math

    for key, (low, high, where) in _RANGES.items():
        value = values.get(key)
        if value is None or isinstance(value, bool):
            continue
        if not (isinstance(value, int | float) and math.isfinite(value) and low <= value <= high):
            raise ConfigError(f"{where}: expected a number from {low:g} to {high:.0f}, got {value!r}")


def _socket(mode: str, data: dict[str, Any], runtime: Path) -> Path:
    """FRONTDESK_SOCKET, else `[gateway] socket`, else /run/frontdesk/gateway.sock (facility) or the user's."""
    if os.environ.get("FRONTDESK_SOCKET"):
        return Path(os.environ["FRONTDESK_SOCKET"])
    gw = data.get("gateway", {})
    if isinstance(gw, dict) and isinstance(gw.get("socket"), str):
        return Path(gw["socket"])
    return FACILITY_SOCKET if mode == "facility" else runtime / "gateway.sock"
