"""Pure handling of Slurm job arrays: task lists (`2-9%2`, `1,3,5-11:2`), task ids (`844_3`), and finding a
task's record in one `scontrol -o show job` snapshot.

Slurm prints a started task as its own record (`JobId=845 ArrayJobId=844 ArrayTaskId=0`) and folds the
tasks still pending into the array's record (`JobId=844 ArrayJobId=844 ArrayTaskId=2-9%2`); a pending task
cancelled alone leaves the fold and is forgotten at once (22.05). No clock, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "MAX_TASKS",
    "TaskList",
    "arrays_present",
    "compress_indices",
    "find_task",
    "parse_task_list",
    "split_task_id",
    "task_index",
]

MAX_TASKS = 4_000_001
"""Slurm's largest MaxArraySize: no index is ever at or above it."""

_TASK_ID = re.compile(r"^(\d{1,19})_(\d{1,7})$")
_ITEM = re.compile(r"^(\d{1,7})(?:-(\d{1,7})(?::(\d{1,7}))?)?$")


@dataclass(frozen=True)
class TaskList:
    """A folded task list: inclusive ranges (start, stop, step) and the `%N` throttle if any."""

    ranges: tuple[tuple[int, int, int], ...]
    throttle: int | None = None

    def __contains__(self, index: object) -> bool:
        if not isinstance(index, int):
            return False
        return any(a <= index <= b and (index - a) % s == 0 for a, b, s in self.ranges)

    def count(self) -> int:
        """How many tasks the list names."""
        return sum((b - a) // s + 1 for a, b, s in self.ranges)


def parse_task_list(text: str) -> TaskList:
    """`2-9%2`, `1,3,5-11:2`, `7` (scontrol's ArrayTaskId, sbatch's --array); ValueError when malformed."""
    body, pct, throttle = text.strip().partition("%")
    if pct and not throttle.isdigit():
        raise ValueError(f"not a task throttle: {text!r}")
    ranges = []
    for item in body.split(","):
        m = _ITEM.match(item.strip())
        if not m:
            raise ValueError(f"not an array task list: {text!r}")
        start = int(m.group(1))
        stop = int(m.group(2)) if m.group(2) else start
        step = int(m.group(3)) if m.group(3) else 1
        if stop < start or step < 1 or stop >= MAX_TASKS:
            raise ValueError(f"not an array task range: {item!r}")
        ranges.append((start, stop, step))
    return TaskList(tuple(ranges), int(throttle) if pct else None)


def compress_indices(indices: Iterable[int], max_running: int | None = None) -> str:
    """sbatch's `--array` value for these indices: runs of consecutive indices as `a-b`, `%N` appended."""
    ordered = sorted(set(indices))
    if not ordered:
        raise ValueError("an array needs at least one task")
    if ordered[0] < 0 or ordered[-1] >= MAX_TASKS:
        raise ValueError(f"array task indices must be 0..{MAX_TASKS - 1}")
    throttle = f"%{max_running}" if max_running else ""
    steps = {b - a for a, b in zip(ordered, ordered[1:], strict=False)}
    if len(steps) == 1 and min(steps) > 1:  # one progression (`0-8:4`): Slurm's SLURM_ARRAY_TASK_STEP as given
        return f"{ordered[0]}-{ordered[-1]}:{steps.pop()}{throttle}"
    parts: list[str] = []
    start = prev = ordered[0]
    for i in [*ordered[1:], None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if i is not None:
            start = prev = i
    return ",".join(parts) + throttle


def split_task_id(backend_id: str) -> tuple[str, int] | None:
    """(`844`, 3) for `844_3`; None for a plain job id or anything else."""
    m = _TASK_ID.match(backend_id)
    return (m.group(1), int(m.group(2))) if m else None


def task_index(records: Iterable[Mapping[str, str]]) -> dict[str, Mapping[str, str]]:
    """`A_i` → the record of every task that has its own record (started, ended, or the last one pending)."""
    out: dict[str, Mapping[str, str]] = {}
    for record in records:
        array, task = record.get("ArrayJobId", ""), record.get("ArrayTaskId", "")
        if array.isdigit() and task.isdigit():
            out[f"{array}_{int(task)}"] = record
    return out


def find_task(
    backend_id: str, records: Mapping[str, Mapping[str, str]], index: Mapping[str, Mapping[str, str]]
) -> Mapping[str, str] | None:
    """The record answering for task `A_i`: its own, else the array's fold when `i` is still in it."""
    own = index.get(backend_id)
    if own is not None:
        return own
    split = split_task_id(backend_id)
    if split is None:
        return None
    array, i = split
    fold = records.get(array)
    if fold is None or fold.get("ArrayJobId") != array:
        return None
    try:
        tasks = parse_task_list(fold.get("ArrayTaskId", ""))
    except ValueError:
        return None
    return fold if i in tasks else None


def arrays_present(records: Sequence[Mapping[str, str]]) -> set[str]:
    """Array job ids with any record in a snapshot."""
    return {r["ArrayJobId"] for r in records if r.get("ArrayJobId", "").isdigit() and r.get("ArrayTaskId")}
