"""What a regular expression needs in the text: literals to test with `in` before running the regex at all.

A first grep pass reads every file; Python's `re` has no literal-prefix skip for an alternation or a pattern
that starts with a class, so searching 20,000 small files costs more in `search()` calls than ripgrep's
whole engine. `required_literals` reads the parsed pattern (the `re` module's own parser) and returns a few
byte strings of which every match contains at least one: a file containing none of them cannot match, and
`in` (memchr/two-way in C) rejects it. `lines_safe` says when one `finditer` over the whole file finds the
same lines as searching line by line (no assertion that can see past a line's end), so a matching file's
lines are found without a `search()` per line.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

__all__ = ["lines_safe", "required_literals"]

_p: Any = importlib.import_module("re._parser")  # the parser `re.compile` uses (no public API; stable in 3.11+)
_MAX_ALTERNATIVES = 8
"""More literals than this and testing each with `in` costs more than the regex would."""


def _parse(pattern: bytes, flags: int) -> Any | None:
    try:
        return _p.parse(pattern, flags)
    except (re.error, OverflowError, RecursionError):
        return None


def required_literals(pattern: bytes, flags: int = 0) -> tuple[bytes, ...] | None:
    """Byte strings of which every match of `pattern` contains at least one; None when none can be told
    (case-insensitive, or a pattern with no literal every match must hold)."""
    parsed = _parse(pattern, flags)
    if parsed is None or parsed.state.flags & re.IGNORECASE:
        return None
    try:
        found = _sequence(list(parsed))
    except RecursionError:
        return None
    return None if found is None else tuple(sorted(found))


def _better(a: frozenset[bytes] | None, b: frozenset[bytes] | None) -> frozenset[bytes] | None:
    """The more selective requirement: the longer shortest literal, then the fewer literals."""
    if b is None or not b or len(b) > _MAX_ALTERNATIVES or min(map(len, b)) == 0:
        return a
    if a is None:
        return b
    ka, kb = (min(map(len, a)), -len(a)), (min(map(len, b)), -len(b))
    return b if kb > ka else a


def _sequence(items: list[tuple[Any, Any]]) -> frozenset[bytes] | None:
    """Items matched one after the other: a run of literals is required, and so is what any item requires."""
    best: frozenset[bytes] | None = None
    run = bytearray()
    for op, av in items:
        if op is _p.LITERAL:
            run.append(av)
            continue
        if run:
            best = _better(best, frozenset([bytes(run)]))
            run.clear()
        best = _better(best, _item(op, av))
    if run:
        best = _better(best, frozenset([bytes(run)]))
    return best


def _item(op: Any, av: Any) -> frozenset[bytes] | None:
    """What one non-literal item requires of every match (None: nothing known)."""
    if op is _p.SUBPATTERN:
        _group, add_flags, _del_flags, sub = av
        return None if add_flags & re.IGNORECASE else _sequence(list(sub))
    if op in (_p.MAX_REPEAT, _p.MIN_REPEAT, _p.POSSESSIVE_REPEAT):
        low, _high, sub = av
        return _sequence(list(sub)) if low >= 1 else None
    if op is _p.ATOMIC_GROUP:
        return _sequence(list(av))
    if op is _p.BRANCH:
        union: set[bytes] = set()
        for branch in av[1]:
            found = _sequence(list(branch))
            if found is None:
                return None
            union |= found
        return frozenset(union) if len(union) <= _MAX_ALTERNATIVES else None
    return None


def lines_safe(pattern: bytes, flags: int = 0) -> bool:
    """Whether searching the whole text (MULTILINE) finds a match inside a line exactly where searching that
    line alone does: no \\A or \\Z, and no lookaround other than a word character (-w's) that could see the
    newline next to a line. A match that spans lines is the caller's to detect (it then goes line by line)."""
    parsed = _parse(pattern, flags)
    return parsed is not None and _safe(list(parsed))


_WORD_ONLY = [(_p.IN, [(_p.CATEGORY, _p.CATEGORY_WORD)])]


def _safe(items: list[tuple[Any, Any]]) -> bool:
    for op, av in items:
        if op is _p.AT and av in (_p.AT_BEGINNING_STRING, _p.AT_END_STRING):
            return False
        if op in (_p.ASSERT, _p.ASSERT_NOT) and list(av[1]) != _WORD_ONLY:
            return False
        if not all(_safe(list(sub)) for sub in _children(op, av)):
            return False
    return True


def _children(op: Any, av: Any) -> list[Any]:
    if op is _p.SUBPATTERN:
        return [av[3]]
    if op in (_p.MAX_REPEAT, _p.MIN_REPEAT, _p.POSSESSIVE_REPEAT):
        return [av[2]]
    if op is _p.ATOMIC_GROUP:
        return [av]
    if op is _p.BRANCH:
        return list(av[1])
    if op is _p.GROUPREF_EXISTS:
        return [b for b in av[1:] if b is not None]
    return []
