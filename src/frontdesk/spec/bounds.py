"""Bounds on hostile spec input: YAML alias expansion and size, text that cannot be stored, and error text.

A 600-byte YAML alias bomb expands to billions of nodes; PyYAML shares the anchored objects, so the cost
comes later, from whatever walks the result (validation, an error message that serialises it). The loader
refuses such a document while composing, before anything walks it. Pure: no I/O.
"""

from __future__ import annotations

import json
import math
from typing import Any

from frontdesk.errors import SpecError

__all__ = [
    "DuplicateKeyError",
    "MAX_ALIASES",
    "MAX_DEPENDS_ON",
    "MAX_EXPANDED_NODES",
    "MAX_MESSAGE",
    "bound_message",
    "check_text",
    "check_unique_keys",
    "expanded_size",
    "loads_unique",
    "preview",
    "unique_keys",
]

MAX_ALIASES = 100
"""Alias uses (`*name`) allowed in one YAML document."""
MAX_EXPANDED_NODES = 100_000
"""Nodes a YAML document may hold once every alias is expanded."""
MAX_DEPENDS_ON = 1000
"""Entries in one job's depends_on."""
MAX_MESSAGE = 300
"""Characters in one error message about a spec."""


def expanded_size(node: Any, limit: int = MAX_EXPANDED_NODES) -> int:
    """How many nodes a composed YAML node stands for with aliases expanded; stops counting past `limit`
    (a shared node is measured once, so a bomb costs its size in the source, not its expansion)."""
    memo: dict[int, int] = {}
    active: set[int] = set()

    def size(n: Any) -> int:
        key = id(n)
        if key in memo:
            return memo[key]
        if key in active:
            raise SpecError("spec: cannot parse: a YAML alias refers to itself")
        value = n.value
        total = 1
        if isinstance(value, list):
            active.add(key)
            for item in value:
                for child in item if isinstance(item, tuple) else (item,):
                    total = min(total + size(child), limit + 1)
            active.discard(key)
        memo[key] = total
        return total

    return size(node)


def check_text(value: Any, where: str = "spec", budget: int = MAX_EXPANDED_NODES) -> None:
    """Refuse (SpecError, 422) strings that cannot be stored or passed to a process: lone surrogates and
    NUL bytes, in keys and values at any depth; refuse structures of more than `budget` nodes."""
    stack: list[tuple[str, Any]] = [(where, value)]
    seen = 0
    while stack:
        path, item = stack.pop()
        seen += 1
        if seen > budget:
            raise SpecError(f"{where}: too large (more than {budget} values)")
        if isinstance(item, str):
            _check_string(path, item)
        elif isinstance(item, dict):
            if len(item) >= _FLAT_DICT and _plain_strings(item):  # an environment: one check in C, no loop
                seen += len(item)
                if seen > budget:
                    raise SpecError(f"{where}: too large (more than {budget} values)")
                continue
            for key, child in item.items():
                if isinstance(key, str) and not _plain(key):
                    _check_string(f"{path} (a key)", key)
                if isinstance(child, str) and _plain(child):  # the common leaf (an environment): no path built
                    seen += 1
                    if seen > budget:
                        raise SpecError(f"{where}: too large (more than {budget} values)")
                    continue
                stack.append((f"{path}.{key}" if isinstance(key, str) and len(key) <= 40 else path, child))
        elif isinstance(item, list | tuple):
            stack.extend((f"{path}[{i}]", child) for i, child in enumerate(item))
        elif isinstance(item, float) and not math.isfinite(item):
            raise SpecError(f"{bound_message(path)}: must be a finite number, got {item}", field=path)


_FLAT_DICT = 16
"""A dict this large is first tried as all plain strings (an environment); a smaller one is walked at once."""


def _plain_strings(item: dict[Any, Any]) -> bool:
    """Whether every key and value is a plain string (see `_plain`): joined and checked at C speed."""
    try:
        text = "".join(item) + "".join(item.values())
    except TypeError:  # a key or value that is not a string: walked one by one
        return False
    return text.isascii() and "\x00" not in text


def _plain(text: str) -> bool:
    """ASCII without NUL: nothing `_check_string` could refuse (isascii is a flag lookup)."""
    return text.isascii() and "\x00" not in text


def _check_string(path: str, text: str) -> None:
    if "\x00" in text:
        raise SpecError(f"{bound_message(path, 120)}: contains a NUL byte", field=path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise SpecError(
            f"{bound_message(path, 120)}: contains a lone surrogate (not valid Unicode)", field=path
        ) from None


def preview(value: Any, limit: int = 60) -> str:
    """A JSON-like rendering of `value` cut at `limit` characters, built without walking past the cut."""
    parts: list[str] = []
    used = 0

    def emit(text: str) -> bool:
        nonlocal used
        parts.append(text)
        used += len(text)
        return used < limit

    def walk(v: Any) -> bool:
        if isinstance(v, dict):
            if not emit("{"):
                return False
            for i, (k, child) in enumerate(v.items()):
                if (i and not emit(", ")) or not emit(f"{_scalar(k)}: ") or not walk(child):
                    return False
            return emit("}")
        if isinstance(v, list | tuple):
            if not emit("["):
                return False
            for i, child in enumerate(v):
                if (i and not emit(", ")) or not walk(child):
                    return False
            return emit("]")
        return emit(_scalar(v))

    complete = walk(value)
    text = "".join(parts)
    if complete and len(text) <= limit:
        return text
    return text[: max(0, limit - 3)] + "..."


def _scalar(v: Any) -> str:
    if isinstance(v, str):
        text = v[:200].encode("utf-8", "backslashreplace").decode()
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + ('..."' if len(v) > 200 else '"')
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)[:200]


def bound_message(text: str, limit: int = MAX_MESSAGE) -> str:
    """One line of at most `limit` characters (valid UTF-8)."""
    line = " ".join(str(text).split())
    line = line.encode("utf-8", "backslashreplace").decode()
    return line if len(line) <= limit else line[: limit - 3] + "..."


class DuplicateKeyError(ValueError):
    """A JSON object writes a key twice; the message is `duplicate key 'NAME'` (the name cut at 80)."""


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are all distinct (`object_pairs_hook`: json keeps the last of a repeated key)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKeyError(f"duplicate key {key[:80]!r}")
        out[key] = value
    return out


def loads_unique(text: bytes | str) -> Any:
    """`json.loads(text)` that raises `DuplicateKeyError` for a key written twice in any object, at any depth.

    One parse, the C scanner calling `unique_keys` per object. A C parse first with the hook only when the text
    could hold a duplicate (keys parsed against colons outside strings) was measured and dropped: counting the
    parsed keys costs what the hook does, and the colons in an environment's values (PATH) send every real
    submission on to the second parse."""
    return json.loads(text, object_pairs_hook=unique_keys)


def check_unique_keys(node: Any) -> None:
    """Refuse a YAML mapping node that writes a key twice (PyYAML keeps the last one silently), before merges
    (`<<`) are flattened: an explicit key may override a merged one."""
    seen: set[tuple[str, str]] = set()
    for key_node, _ in node.value:
        if getattr(key_node, "id", "") == "scalar" and key_node.tag != "tag:yaml.org,2002:merge":
            key = (key_node.tag, key_node.value)
            if key in seen:
                where = f"line {key_node.start_mark.line + 1}"
                raise SpecError(f"spec: cannot parse: duplicate key {key_node.value[:80]!r} ({where})")
            seen.add(key)
