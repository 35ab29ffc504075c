"""Guard rules as data: load `rules.toml` (plus a site's file), and match one pattern against an invocation.

A rule is a list of patterns sharing an id; every field a pattern names must hold (see rules.toml's header).
Named checks (`check = "..."`) are implemented in `checker.py`; this module only carries them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from frontdesk.guard.matching import WRITES, flags_of, match, prog_match, rx
from frontdesk.guard.model import Decision
from frontdesk.guard.targets import TARGETS, classify_path

__all__ = ["Rule", "RuleSet", "load_rules", "default_rules", "TARGETS", "classify_path", "flags_of", "match", "rx"]

_DEFAULT_FILE = Path(__file__).with_name("rules.toml")
_FIELDS = {
    "id",
    "action",
    "reason",
    "alternative",
    "programs",
    "programs_not",
    "subcommand",
    "flags_all",
    "flags_any",
    "flags_none",
    "flag_values",
    "unless_flag_values",
    "args_regex",
    "targets_any",
    "redirect_targets_any",
    "env_any",
    "code_regex",
    "code_scope",
    "upstream_any",
    "via_any",
    "via_none",
    "roles",
    "check",
    "gpus_managed",
    "sources_only",
    "overwrite_only",
    "redirect_ops",
}

_LIST_FIELDS = (
    "programs", "programs_not", "subcommand", "flags_all", "flags_any", "flags_none", "targets_any",
    "redirect_targets_any", "upstream_any", "via_any", "via_none", "roles", "redirect_ops",
)  # fmt: skip


@dataclass(frozen=True)
class Rule:
    """One pattern of a rule."""

    id: str
    action: Decision
    reason: str
    alternative: str | None = None
    programs: tuple[str, ...] = ()
    programs_not: tuple[str, ...] = ()
    subcommand: tuple[str, ...] = ()
    flags_all: tuple[str, ...] = ()
    flags_any: tuple[str, ...] = ()
    flags_none: tuple[str, ...] = ()
    flag_values: tuple[tuple[str, str], ...] = ()
    unless_flag_values: tuple[tuple[str, str], ...] = ()
    args_regex: str | None = None
    targets_any: tuple[str, ...] = ()
    redirect_targets_any: tuple[str, ...] = ()
    env_any: tuple[tuple[str, str], ...] = ()
    code_regex: str | None = None
    code_scope: str = "inline"
    upstream_any: tuple[str, ...] = ()
    via_any: tuple[str, ...] = ()
    via_none: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()
    check: str | None = None
    gpus_managed: bool | None = None
    sources_only: bool = False
    """targets_any looks at what mv/cp/rsync take from (every positional but the destination)."""
    overwrite_only: bool = False
    """redirect_targets_any looks only at `>`, `>|`, `&>` (what empties the file), not at appends or edits."""
    redirect_ops: tuple[str, ...] = ()
    """redirect_targets_any looks only at these operators (`<>`: a file changed in place by sed -i, cp onto)."""

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], where: str, validate: bool = True) -> Rule:
        """Build a pattern from one `[[rule]]` table; raises ValueError naming the bad field.

        Regexes are compiled on first use (cold start of the hook); `validate` compiles them now.
        """
        unknown = set(raw) - _FIELDS
        if unknown:
            raise ValueError(f"{where}: unknown field(s) {sorted(unknown)}")
        if "id" not in raw or "reason" not in raw:
            raise ValueError(f"{where}: a rule needs id and reason")
        kw: dict[str, Any] = {
            "id": str(raw["id"]),
            "reason": str(raw["reason"]),
            "action": Decision(raw.get("action", "ask")),
            "alternative": raw.get("alternative"),
        }
        for name in _LIST_FIELDS:
            if name in raw:
                kw[name] = tuple(str(x) for x in raw[name])
        bad_ops = set(kw.get("redirect_ops", ())) - set(WRITES)
        if bad_ops:
            raise ValueError(f"{where}: unknown redirect_ops {sorted(bad_ops)} (one of {' '.join(WRITES)})")
        for name in ("targets_any", "redirect_targets_any"):
            bad = set(kw.get(name, ())) - set(TARGETS)
            if bad:
                raise ValueError(f"{where}: unknown target(s) {sorted(bad)}")
        for name in ("flag_values", "unless_flag_values", "env_any"):
            if name in raw:
                kw[name] = tuple((str(k), str(v)) for k, v in dict(raw[name]).items())
        for name in ("args_regex", "code_regex"):
            if name in raw:
                kw[name] = str(raw[name])
        if validate:
            patterns = [kw.get("args_regex"), kw.get("code_regex")]
            patterns += [v for name in ("flag_values", "unless_flag_values", "env_any") for _, v in kw.get(name, ())]
            for pattern in patterns:
                if pattern is not None:
                    try:
                        re.compile(pattern)
                    except re.error as exc:
                        raise ValueError(f"{where}: bad regex {pattern!r}: {exc}") from None
        for name in ("code_scope", "check"):
            if name in raw:
                kw[name] = str(raw[name])
        for name in ("gpus_managed", "sources_only", "overwrite_only"):
            if name in raw:
                if not isinstance(raw[name], bool):
                    raise ValueError(f"{where}: {name} must be true or false")
                kw[name] = raw[name]
        return cls(**kw)

    @property
    def needs_invocation(self) -> bool:
        """Whether this pattern is matched per simple command (not a whole-command check)."""
        return self.check not in ("parse-error", "secrets", "fork-bomb")


@dataclass
class RuleSet:
    """The active patterns plus the flag tables they are matched with."""

    rules: list[Rule]
    aliases: dict[str, dict[str, str]] = field(default_factory=dict)
    value_flags: dict[str, frozenset[str]] = field(default_factory=dict)

    _by_program: dict[str, list[Rule]] = field(default_factory=dict, repr=False)
    _longs: dict[str, frozenset[str]] = field(default_factory=dict, repr=False)

    def long_names(self, program: str) -> frozenset[str]:
        """The long option names the rules for `program` look at (`recursive`, `force`, `delete` ...)."""
        hit = self._longs.get(program)
        if hit is None:
            names = {n for r in self.candidates(program) for n in (*r.flags_all, *r.flags_any, *r.flags_none)}
            names |= {k for r in self.candidates(program) for k, _ in (*r.flag_values, *r.unless_flag_values)}
            names |= set(self.aliases.get("*", {}).values()) | set(self.aliases.get(program, {}).values())
            hit = self._longs[program] = frozenset(n for n in names if len(n) > 1)
        return hit

    @property
    def ids(self) -> list[str]:
        """Every rule id, once, in file order."""
        return list(dict.fromkeys(r.id for r in self.rules))

    def candidates(self, program: str) -> list[Rule]:
        """The per-invocation patterns that can match a command named `program`, in file order."""
        hit = self._by_program.get(program)
        if hit is None:
            hit = [
                r
                for r in self.rules
                if r.needs_invocation and (not r.programs or (bool(program) and prog_match(program, r.programs)))
            ]
            self._by_program[program] = hit
        return hit


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "frontdesk"


def _read(path: Path) -> dict[str, Any]:
    """A rule file's data; parsed TOML is cached as JSON (keyed by path, size and mtime) for cold starts."""
    import json
    import zlib  # a cache key, not a digest: zlib is built in and cheap to import

    stat = path.stat()
    key = f"{zlib.crc32(str(path.resolve()).encode()):08x}-{stat.st_size}-{stat.st_mtime_ns}"
    cache = _cache_dir() / f"guard-rules-{key}.json"
    try:
        return dict(json.loads(cache.read_text()))
    except (OSError, ValueError):
        pass
    import tomllib

    with path.open("rb") as fh:
        data = tomllib.load(fh)
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data))
        os.replace(tmp, cache)
    except OSError:
        pass
    return data


def load_rules(
    extra_files: Iterable[str | Path] = (),
    disable: Iterable[str] = (),
    actions: Mapping[str, str] | None = None,
    include_default: bool = True,
) -> RuleSet:
    """The default rules, plus site files, minus disabled ids, with actions overridden."""
    docs = [(_DEFAULT_FILE, _read(_DEFAULT_FILE))] if include_default else []
    docs += [(Path(p), _read(Path(p))) for p in extra_files]
    rules: list[Rule] = []
    aliases: dict[str, dict[str, str]] = {}
    value_flags: dict[str, set[str]] = {}
    for path, doc in docs:
        for prog, table in doc.get("aliases", {}).items():
            aliases.setdefault(prog, {}).update({str(k): str(v) for k, v in table.items()})
        for prog, flags in doc.get("value_flags", {}).items():
            value_flags.setdefault(prog, set()).update(str(f) for f in flags)
        shipped = path == _DEFAULT_FILE  # tested in CI; compiled lazily
        for i, raw in enumerate(doc.get("rule", [])):
            rules.append(Rule.from_dict(raw, f"{path.name} rule #{i + 1}", validate=not shipped))
    off = set(disable)
    overrides = {k: Decision(v) for k, v in (actions or {}).items()}
    out = []
    for rule in rules:
        if rule.id in off:
            continue
        if rule.id in overrides:
            rule = Rule(**{**rule.__dict__, "action": overrides[rule.id]})
        out.append(rule)
    return RuleSet(out, aliases, {k: frozenset(v) for k, v in value_flags.items()})


_default: RuleSet | None = None


def default_rules() -> RuleSet:
    """The shipped rules, loaded once per process."""
    global _default
    if _default is None:
        _default = load_rules()
    return _default
