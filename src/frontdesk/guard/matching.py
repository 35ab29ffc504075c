"""Matching one rule pattern against one invocation: canonical flags, targets, redirections.

Split from rules.py (which loads the rule files and re-exports these names); pure functions of the data.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

from frontdesk.guard.model import GuardContext
from frontdesk.guard.shellout import unread_code
from frontdesk.guard.targets import classify_path
from frontdesk.guard.words import Invocation, Word

if TYPE_CHECKING:
    from frontdesk.guard.rules import Rule, RuleSet

__all__ = ["flags_of", "match", "rx", "prog_match", "WRITES"]

WRITES = (">", ">>", ">|", "&>", "&>>", ">&", "<>")  # `<>`: changed in place (sed -i F, cp X F), not emptied


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
            if canon not in rules.long_names(prog):  # getopt takes a unique prefix: --rec --for is -r -f
                longer = [n for n in rules.long_names(prog) if n.startswith(canon)]
                canon = longer[0] if len(longer) == 1 and canon else canon
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


def prog_match(prog: str, patterns: tuple[str, ...]) -> bool:
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
    if rule.programs and not (prog and prog_match(prog, rule.programs)):
        return False
    if rule.programs_not and (not prog or prog_match(prog, rule.programs_not)):
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
        if rule.code_scope == "script" or inv.inline_code is None:
            return False
        if not rx(rule.code_regex).search(unread_code(inv.inline_code)):  # rmtree("build") is judged as rm -rf
            return False
    # the words' regex before the flags and targets: a search costs less than classifying every path
    if rule.args_regex is not None:
        joined = " ".join(w.text if not w.dynamic else w.raw for w in inv.args)
        if not rx(rule.args_regex).search(joined):
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
    return not rule.redirect_targets_any or _redirects_match(rule, inv, ctx)


def _redirects_match(rule: Rule, inv: Invocation, ctx: GuardContext) -> bool:
    """Whether a file the invocation writes (a redirection, or a write it amounts to) is a target kind."""
    outs = [
        w
        for op, w in inv.redirects
        if op in WRITES
        and not (rule.overwrite_only and op in (">>", "&>>", "<>"))
        and (not rule.redirect_ops or op in rule.redirect_ops)
    ]
    return any(set(rule.redirect_targets_any) & classify_path(w, ctx, inv.cwd) for w in outs)
