"""Job arrays and sweeps: the `array` range syntax and the `sweep` parameter points, rendered per task. Pure.

`array`: Slurm's syntax, `0-99`, `1,3,5-9`, `0-99:2` (a step), with `%N` at the end for at most N tasks at
once (`0-99%8`). `sweep`: a grid `{lr: [1e-3, 1e-4], seed: [1, 2, 3]}` (every combination, the last name
varying fastest) or a list of points `[{lr: 1e-3, seed: 1}, ...]` (same names in each). Task i of a sweep
gets point i: `{name}` in the command is replaced by the value in one pass (inside shell text, i.e. a `script`
or the text of `sh -c`/`bash -lc`, quoted for where it lands: spec/shellfill.py) and FD_SWEEP_<NAME> is set.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from frontdesk.spec.shellfill import check_values, fill_plain, fill_shell, shell_text_index

__all__ = [
    "MAX_ARRAY_INDEX",
    "MAX_ARRAY_TASKS",
    "MAX_SWEEP_NAMES",
    "MAX_ARRAY_BYTES",
    "ArrayRange",
    "SweepValue",
    "check_array",
    "parse_array",
    "render_argv",
    "render_script",
    "sweep_env",
    "sweep_points",
]

MAX_ARRAY_TASKS = 10_000
"""The most tasks one array may have (Slurm's default MaxArraySize is 1001; sites raise it)."""
MAX_ARRAY_INDEX = 1_000_000
"""The largest task index."""
MAX_ARRAY_BYTES = 64 * 1024 * 1024
"""The most bytes an array's tasks may store together: each task keeps its own command, script and environment,
so a 1 MiB script in a 10,000-task array would be 10 GiB written in one transaction."""
MAX_SWEEP_NAMES = 32
"""The most parameters one sweep may name."""

SweepValue = str | int | float | bool
"""What one sweep parameter takes: a scalar."""

_PART = re.compile(r"([0-9]+)(?:-([0-9]+)(?::([0-9]+))?)?", re.ASCII)
_DIGITS = re.compile(r"[0-9]+", re.ASCII)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


@dataclass(frozen=True)
class ArrayRange:
    """The task indices of an array, ascending and unique, and its `%N` limit (None: no limit)."""

    indices: tuple[int, ...]
    max_running: int | None = None

    @property
    def size(self) -> int:
        """How many tasks."""
        return len(self.indices)


def parse_array(text: str) -> ArrayRange:
    """`0-99`, `1,3,5-9`, `0-99:2`, each with an optional `%N`; ValueError (one line) when malformed."""
    body, pct, limit_text = str(text).strip().partition("%")
    limit: int | None = None
    if pct:
        # ASCII digits only: str.isdigit() takes '٣' and int() reads it, which sbatch then refuses
        if not _DIGITS.fullmatch(limit_text) or _number(limit_text) < 1:
            raise ValueError(f"the limit after % must be a whole number of at least 1, got {limit_text!r}")
        if _number(limit_text) > MAX_ARRAY_TASKS:
            raise ValueError(f"the limit after % must be at most {MAX_ARRAY_TASKS}, got {limit_text[:20]!r}")
        limit = _number(limit_text)
    if not body:
        raise ValueError("expected task indices such as 0-99, 1,3,5-9 or 0-99%8")
    seen: set[int] = set()
    for part in body.split(","):
        seen.update(_part(part.strip()))
        if len(seen) > MAX_ARRAY_TASKS:
            raise ValueError(f"more than {MAX_ARRAY_TASKS} tasks")
    return ArrayRange(tuple(sorted(seen)), limit)


def _number(digits: str) -> int:
    """ASCII digits as a number; past 12 digits any value is over every bound (and int() of 5,000 digits fails)."""
    return int(digits) if len(digits) <= 12 else 10**12


def _part(part: str) -> range:
    m = _PART.fullmatch(part)
    if m is None:
        raise ValueError(f"{part[:40]!r} is not an index, a range a-b or a-b:step")
    lo = _number(m.group(1))
    hi = _number(m.group(2)) if m.group(2) is not None else lo
    step = _number(m.group(3)) if m.group(3) is not None else 1
    if hi < lo:
        raise ValueError(f"range {part[:40]!r} ends before it starts")
    if hi > MAX_ARRAY_INDEX:
        raise ValueError(f"index {(m.group(2) or m.group(1))[:20]} is over the largest allowed ({MAX_ARRAY_INDEX})")
    if step < 1:
        raise ValueError(f"the step in {part!r} must be at least 1")
    if (hi - lo) // step + 1 > MAX_ARRAY_TASKS:
        raise ValueError(f"more than {MAX_ARRAY_TASKS} tasks")
    return range(lo, hi + 1, step)


def _check_value(name: str, value: object) -> SweepValue:
    if isinstance(value, bool | int | float | str):
        if isinstance(value, str) and any(c in value for c in "\0\n\r"):
            raise ValueError(f"sweep value of {name!r} must be one line without NUL bytes")
        if isinstance(value, str) and len(value) > 1000:
            raise ValueError(f"sweep value of {name!r} is longer than 1000 characters")
        return value
    raise ValueError(f"sweep value of {name!r} must be a string, number or boolean, got {type(value).__name__}")


def _check_names(names: Sequence[str]) -> None:
    if not names:
        raise ValueError("a sweep needs at least one parameter")
    if len(names) > MAX_SWEEP_NAMES:
        raise ValueError(f"more than {MAX_SWEEP_NAMES} sweep parameters")
    upper: set[str] = set()
    for name in names:
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValueError(f"sweep parameter {name!r} is not a name (letters, digits, _; not starting with a digit)")
        if name.upper() in upper:
            raise ValueError(f"sweep parameters {name!r} and another differ only in case (same FD_SWEEP_ variable)")
        upper.add(name.upper())


def sweep_points(sweep: object) -> list[dict[str, SweepValue]]:
    """The points of a grid (mapping of name -> list) or of a list of mappings; ValueError (one line) if bad."""
    if isinstance(sweep, Mapping):
        names = list(sweep)
        _check_names(names)
        axes: list[list[SweepValue]] = []
        total = 1
        for name in names:
            values = sweep[name]
            values = values if isinstance(values, list | tuple) else [values]
            if not values:
                raise ValueError(f"sweep parameter {name!r} has no values")
            axes.append([_check_value(name, v) for v in values])
            total *= len(values)
            if total > MAX_ARRAY_TASKS:
                raise ValueError(f"the sweep grid has more than {MAX_ARRAY_TASKS} points")
        return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*axes)]
    if isinstance(sweep, list | tuple):
        if not sweep:
            raise ValueError("a sweep list needs at least one point")
        if len(sweep) > MAX_ARRAY_TASKS:
            raise ValueError(f"the sweep list has more than {MAX_ARRAY_TASKS} points")
        points: list[dict[str, SweepValue]] = []
        first: list[str] | None = None
        for i, point in enumerate(sweep):
            if not isinstance(point, Mapping):
                raise ValueError(f"sweep point {i} must be a mapping of name: value")
            names = list(point)
            if first is None:
                _check_names(names)
                first = names
            elif set(names) != set(first):
                raise ValueError(f"sweep point {i} names {sorted(names)}, point 0 names {sorted(first)}")
            points.append({n: _check_value(n, point[n]) for n in first})
        return points
    raise ValueError("sweep must be a mapping of name: [values] or a list of points")


def _text(value: SweepValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _show(value: object) -> str:
    return _text(value) if isinstance(value, bool | int | float | str) else str(value)


def render_argv(argv: Sequence[str], point: Mapping[str, SweepValue]) -> list[str]:
    """The command with `{name}` filled; a shell's text (`bash -lc TEXT`, `env sh -e -c TEXT`) quoted for the shell."""
    shell_at = shell_text_index(argv)
    return [
        fill_shell(arg, point, _show) if i == shell_at else fill_plain(arg, point, _show) for i, arg in enumerate(argv)
    ]


def render_script(script: str, point: Mapping[str, SweepValue]) -> str:
    """A script with `{name}` filled, each value quoted for where it lands (spec/shellfill.py)."""
    return fill_shell(script, point, _show)


def sweep_env(point: Mapping[str, SweepValue]) -> dict[str, str]:
    """FD_SWEEP_<NAME>=value for each parameter of the point."""
    return {f"FD_SWEEP_{name.upper()}": _text(value) for name, value in point.items()}


def check_array(
    array: str | None, sweep: object, command: Sequence[str], script: str | None, env: Mapping[str, str]
) -> None:
    """ValueError (one line) when an array's tasks cannot be made: indices past the sweep's points, more than
    MAX_ARRAY_BYTES stored, or a sweep value that cannot be quoted where its `{name}` lands."""
    rng = parse_array(array) if array is not None else None
    points = sweep_points(sweep) if sweep is not None else None
    if rng is not None and points is not None and rng.indices[-1] >= len(points):
        raise ValueError(f"array index {rng.indices[-1]} is past the sweep's {len(points)} points")
    size = rng.size if rng is not None else len(points or ())
    per_task = len(json.dumps([script, list(command), dict(env)]))
    texts = [script] if script is not None else []
    at = shell_text_index(command)
    texts += [command[at]] if at is not None else []
    values: dict[str, set[str]] = {}
    for point in points or ():
        for name, value in point.items():
            values.setdefault(name, set()).add(_text(value))
    for name, shown in values.items():
        uses = sum(t.count("{" + name + "}") for t in [*command, *(script or "",)]) + 1  # + FD_SWEEP_<NAME>
        per_task += uses * 5 * max(len(json.dumps(v)) for v in shown)  # shell quoting: ' becomes '"'"'
    if size * per_task > MAX_ARRAY_BYTES:
        raise ValueError(
            f"{size} tasks of up to {per_task} bytes each would store {size * per_task >> 20} MiB, over "
            f"{MAX_ARRAY_BYTES >> 20} MiB: put the script in a file and run it"
        )
    for text in texts:
        check_values(text, values)
