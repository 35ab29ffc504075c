"""Every table of frontdesk.toml checked against the keys its readers take, when the gateway starts.

Each reader declares the keys it takes next to its parser (a `TableKeys`, derived from a dataclass's fields where
there is one); `TABLES` gathers them, one entry per table (the union of its readers). An unknown key, an unknown
nested key (`[guard.partitions.NAME]`, `[[storage.forward]]`) and an unknown table is one line naming the file,
the table, the key and the nearest known name. Security tables (`REFUSED`) and the security keys of the others
(`SECURITY_KEYS`: TLS, tokens, MUNGE) refuse the start (ConfigError, exit 2); the other tables' lines are warnings.
`[policy]` is its parser's: a refused edit keeps the version in force (policy/plugin.py), a first start stops.
A table named after an installed site plug-in or backend is that plug-in's to check.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from frontdesk.config import GATEWAY_KEYS, LOCAL_KEYS, Settings, TableKeys, nearest, read_toml
from frontdesk.errors import ConfigError

__all__ = ["REFUSED", "SECURITY_KEYS", "TABLES", "Finding", "check_file", "check_settings"]


def _union(*parts: TableKeys) -> TableKeys:
    keys = frozenset().union(*(p.keys for p in parts))
    nested = {k: v for p in parts for k, v in p.nested.items()}
    named = {k: v for p in parts for k, v in p.named.items()}
    return TableKeys(parts[0].table, keys, nested, named)


def _tables() -> dict[str, TableKeys]:
    from frontdesk.agents.model import AGENTS_KEYS
    from frontdesk.api.authfail import AuthFailures
    from frontdesk.backends.slurm.config import SLURM_KEYS
    from frontdesk.backends.slurm.plugin import SlurmPlugin
    from frontdesk.core.quotas import LIMITS_KEYS
    from frontdesk.guard.context import GUARD_KEYS
    from frontdesk.identity import Roles
    from frontdesk.jobenv import SITE_KEYS
    from frontdesk.memory.scopes import MEMORY_KEYS
    from frontdesk.policy.config import POLICY_KEYS
    from frontdesk.storage.forward import FORWARD_KEYS
    from frontdesk.storage.plugin import STORAGE_KEYS
    from frontdesk.store.retention import JOURNAL_KEYS
    from frontdesk.telemetry.routes import TELEMETRY_KEYS

    parts = [GATEWAY_KEYS, LOCAL_KEYS, AGENTS_KEYS, AuthFailures.KEYS, SLURM_KEYS]
    parts += [LIMITS_KEYS, GUARD_KEYS, TableKeys.of("env", SITE_KEYS), MEMORY_KEYS, POLICY_KEYS]
    parts += [FORWARD_KEYS, STORAGE_KEYS, JOURNAL_KEYS, TELEMETRY_KEYS]
    parts += [TableKeys.of("access", Roles.KEYS), TableKeys.of("access", SlurmPlugin.ACCESS_KEYS)]
    by_table: dict[str, list[TableKeys]] = {}
    for part in parts:
        by_table.setdefault(part.table, []).append(part)
    return {table: _union(*found) for table, found in by_table.items()}


TABLES: dict[str, TableKeys] = _tables()
"""Every table the gateway reads, with the keys of all its readers."""

REFUSED = frozenset({"access", "guard", "env", "limits", "agents", "journal", "slurm", "policy"})
"""Tables where an unknown key stops the start: security settings, and the tables whose parsers always refused."""

SECURITY_KEYS: dict[str, frozenset[str]] = {
    "gateway": frozenset("tls_cert tls_key tls_ca insecure_plaintext token tokens tokens_file munge".split()),
    "storage": frozenset("agent_tls_ca agent_key_file insecure_plaintext".split()),
}
"""Keys of warned tables whose near misses refuse the start all the same (a misspelt `tls_cert`)."""

_SECURITY_NEAR = 0.6
"""How close (difflib's ratio) an unknown key must be to a security key, or a table to a refused one, to refuse."""


@dataclass(frozen=True)
class Finding:
    """One unknown key or table: its line, and whether it refuses the start."""

    line: str
    refuse: bool


def _name(text: object) -> str:
    """A key or table name as one short line: quoted (repr) unless plain, at most 80 characters."""
    plain = isinstance(text, str) and text.isascii() and text.isprintable() and " " not in text
    shown = str(text) if plain else repr(text)
    return shown if len(shown) <= 80 else shown[:77] + "..."


def _close(a: str, b: str) -> bool:
    import difflib

    return difflib.SequenceMatcher(None, a, b).ratio() >= _SECURITY_NEAR


def _unknown(where: str, key: str, known: TableKeys, refuse: bool, security: frozenset[str]) -> Finding:
    near = nearest(key, known.keys)
    hint = f"did you mean {near}?" if near else "it takes no keys"
    refuse = refuse or (near in security and _close(key, str(near)))
    return Finding(f"{where} {_name(key)} is not a setting: {hint}", refuse)


def _walk(where: str, value: Mapping[str, Any], known: TableKeys, refuse: bool, sec: frozenset[str]) -> list[Finding]:
    out: list[Finding] = []
    for key, sub in value.items():
        if key not in known.keys:
            out.append(_unknown(where, key, known, refuse, sec))
        elif key in known.nested:
            subs = sub if isinstance(sub, list) else [sub]
            name = f"[[{known.table}.{key}]]" if isinstance(sub, list) else f"[{known.table}.{key}]"
            for entry in (s for s in subs if isinstance(s, dict)):
                out += _walk(name, entry, known.nested[key], refuse, frozenset())
        elif (inner := known.named.get(key)) is not None and isinstance(sub, dict):
            for label, entry in sub.items():
                if isinstance(entry, dict):
                    out += _walk(f"[{known.table}.{key}.{_name(label)}]", entry, inner, refuse, frozenset())
    return out


def _plugin_tables() -> frozenset[str]:
    """Names of installed site plug-ins and backends: their tables are theirs to check."""
    from frontdesk.plugins import backend_classes, plugin_classes

    return frozenset(plugin_classes()) | frozenset(backend_classes())


def check_file(path: Path, data: Mapping[str, Any], own: frozenset[str] = frozenset()) -> list[Finding]:
    """The findings of one config file's tables (`own`: tables that belong to site plug-ins)."""
    out: list[Finding] = []
    for table, value in data.items():
        known = TABLES.get(table)
        if known is None:
            if table in own:
                continue
            near = nearest(table, TABLES)
            refuse = near in REFUSED and _close(table, str(near))
            out.append(Finding(f"{path}: [{_name(table)}] is not a setting: did you mean [{near}]?", refuse))
        elif not isinstance(value, dict):
            out.append(Finding(f"{path}: {table} = {_name(value)}: expected a table [{table}]", table in REFUSED))
        elif table != "policy":  # its parser's: see the module docstring
            sec = SECURITY_KEYS.get(table, frozenset())
            out += [
                Finding(f"{path}: {f.line}", f.refuse) for f in _walk(f"[{table}]", value, known, table in REFUSED, sec)
            ]
    return out


def check_settings(settings: Settings) -> None:
    """Check the site's and the user's config files: warnings on stderr, ConfigError for the first refusal."""
    from frontdesk.paths import site_config_path

    own = _plugin_tables() - TABLES.keys()
    findings: list[Finding] = []
    for path in dict.fromkeys(p for p in (site_config_path(), settings.config_file) if p is not None):
        findings += check_file(path, read_toml(path), own)
    for finding in findings:
        if not finding.refuse:
            sys.stderr.write(f"frontdesk: warning: {finding.line}\n")
    refused = [f for f in findings if f.refuse]
    if refused:
        raise ConfigError(refused[0].line)
