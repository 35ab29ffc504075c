"""Guard rules as data: load `rules.toml` (plus a site's file), and match one pattern against an invocation.

A rule is a list of patterns sharing an id; every field a pattern names must hold (see rules.toml's header).
Named checks (`check = "..."`) are implemented in `checker.py`; this module only carries them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from frontdesk.guard.model import Decision, GuardContext
from frontdesk.guard.shell import Invocation, Word
from frontdesk.guard.targets import TARGETS, classify_path

__all__ = ["Rule", "RuleSet", "load_rules", "default_rules", "TARGETS", "classify_path", "flags_of", "rx"]

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

_WRITES = (">", ">>", ">|", "&>", "&>>", ">&", "<>")  # `<>`: changed in place (sed -i F, cp X F), not emptied
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
        bad_ops = set(kw.get("redirect_ops", ())) - set(_WRITES)
        if bad_ops:
            raise ValueError(f"{where}: unknown redirect_ops {sorted(bad_ops)} (one of {' '.join(_WRITES)})")
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
                if r.needs_invocation and (not r.programs or (bool(program) and _prog_match(program, r.programs)))
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


# -- matching ---------------------------------------------------------------------------------------
def flags_of(inv: Invocation, rules: RuleSet) -> tuple[dict[str, list[str | None]], list[Word]]:
    """Canonical flags (with value candidates) and positional words of one invocation."""
    prog = inv.program
    aliases = {**rules.aliases.get("*", {}), **rules.aliases.get(prog, {})}
    takes_value = rules.value_flags.get(prog, frozenset())
    flags: dict[str, list[str | None]] = {}
    positionals: list[Word] = []
    args = inv.args
    i = 0
    rest = False
    while i < len(args):
        w = args[i]
        t = w.text
        nxt = args[i + 1].text if i + 1 < len(args) else None
        if rest or not w.is_flag or w.dynamic and not t.startswith("-"):
            positionals.append(w)
        elif t == "--":
            rest = True
        elif t.startswith("--"):
            name, eq, value = t[2:].partition("=")
            canon = aliases.get(name, name)
            if eq:
                flags.setdefault(canon, []).append(value)
            else:
                flags.setdefault(canon, []).append(nxt if nxt is not None and not nxt.startswith("-") else None)
                if t in takes_value:
                    i += 1
        else:
            body = t[1:]
            if t in takes_value:
                flags.setdefault(aliases.get(body, body), []).append(nxt)
                i += 1
            elif len(body) > 1 and t[:2] in takes_value:
                flags.setdefault(aliases.get(body[0], body[0]), []).append(body[1:])
            else:
                if "=" in body:  # -ip=0.0.0.0 (single-dash long option)
                    name, _, value = body.partition("=")
                    flags.setdefault(aliases.get(name, name), []).append(value)
                for j, ch in enumerate(body):
                    val = body[j + 1 :] if j == 0 and len(body) > 1 else None
                    if j == len(body) - 1:
                        val = nxt if nxt is not None and not nxt.startswith("-") else val
                    flags.setdefault(aliases.get(ch, ch), []).append(val)
                flags.setdefault(aliases.get(body, body), []).append(nxt)
        i += 1
    return flags, positionals


def _prog_match(prog: str, patterns: tuple[str, ...]) -> bool:
    return any(p == "*" or p == prog or (p.endswith("*") and prog.startswith(p[:-1])) for p in patterns)


@lru_cache(maxsize=512)
def rx(pattern: str) -> re.Pattern[str]:
    """A rule regex, compiled on first use."""
    return re.compile(pattern)


def _values_match(flags: dict[str, list[str | None]], table: tuple[tuple[str, str], ...]) -> bool:
    for name, pattern in table:
        for value in flags.get(name, ()):
            if rx(pattern).search(value if value is not None else ""):
                return True
    return False


def _targets_match(
    rule: Rule, inv: Invocation, ctx: GuardContext, flags: dict[str, list[str | None]], positionals: list[Word]
) -> bool:
    """Whether a positional (or a path-like flag value) is one of the rule's target kinds."""
    words = positionals[1:] if inv.program in ("chmod", "chown", "chgrp") else positionals
    if rule.sources_only:  # mv SRC... DEST (or -t DEST SRC...): what is taken away, never a flag's value
        return any(
            set(rule.targets_any) & classify_path(w, ctx, inv.cwd)
            for w in (words if "t" in flags or "target-directory" in flags else words[:-1])
        )
    seen = {w.text for w in words}
    words = words + [
        Word(v, v)
        for vals in flags.values()
        for v in vals
        if v and v.startswith(("/", "~", "./", "../")) and v not in seen
    ]
    return any(set(rule.targets_any) & classify_path(w, ctx, inv.cwd) for w in words)


def match(rule: Rule, inv: Invocation, ctx: GuardContext, rules: RuleSet) -> bool:
    """Whether this pattern holds for this invocation (named `check`s excluded: see checker)."""
    prog = inv.program
    if rule.roles and str(ctx.node_role) not in rule.roles:
        return False
    if rule.gpus_managed is not None and rule.gpus_managed != ctx.gpus_managed:
        return False
    if rule.programs and not (prog and _prog_match(prog, rule.programs)):
        return False
    if rule.programs_not and (not prog or _prog_match(prog, rule.programs_not)):
        return False
    if rule.via_any and not any(v in rule.via_any for v in inv.via):
        return False
    if rule.via_none and any(v.split(" ")[0] in rule.via_none for v in inv.via):
        return False
    if rule.upstream_any:
        feeders = set(inv.upstream) | set(inv.stdin_from)
        feeders.update(p for w in inv.args for p in w.subst_programs)
        if not feeders.intersection(rule.upstream_any):
            return False
    if rule.env_any:
        if not any(rx(pattern).search(inv.env[name]) for name, pattern in rule.env_any if name in inv.env):
            return False
    if rule.code_regex is not None:
        if rule.code_scope == "script" or inv.inline_code is None or not rx(rule.code_regex).search(inv.inline_code):
            return False
    needs_flags = (
        rule.subcommand
        or rule.flags_all
        or rule.flags_any
        or rule.flags_none
        or rule.flag_values
        or rule.unless_flag_values
        or rule.targets_any
    )
    if needs_flags:
        flags, positionals = flags_of(inv, rules)
        if rule.subcommand and not (positionals and positionals[0].text in rule.subcommand):
            return False
        if rule.flags_all and not all(f in flags for f in rule.flags_all):
            return False
        if rule.flags_any and not any(f in flags for f in rule.flags_any):
            return False
        if rule.flags_none and any(f in flags for f in rule.flags_none):
            return False
        if rule.flag_values and not _values_match(flags, rule.flag_values):
            return False
        if rule.unless_flag_values and _values_match(flags, rule.unless_flag_values):
            return False
        if rule.targets_any and not _targets_match(rule, inv, ctx, flags, positionals):
            return False
    if rule.args_regex is not None:
        joined = " ".join(w.text if not w.dynamic else w.raw for w in inv.args)
        if not rx(rule.args_regex).search(joined):
            return False
    if rule.redirect_targets_any:
        outs = [
            w
            for op, w in inv.redirects
            if op in _WRITES
            and not (rule.overwrite_only and op in (">>", "&>>", "<>"))
            and (not rule.redirect_ops or op in rule.redirect_ops)
        ]
        if not any(set(rule.redirect_targets_any) & classify_path(w, ctx, inv.cwd) for w in outs):
            return False
    return True
