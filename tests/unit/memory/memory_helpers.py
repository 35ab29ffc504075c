"""Plain-data helpers for the memory unit tests: a fake clock and job contexts."""

from __future__ import annotations

from typing import Any

from frontdesk.memory.context import JobContext, context_of

DAY = 86400.0


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: float = 1_796_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def ctx(memory: str | int | None = "4G", command: list[str] | None = None, **extra: Any) -> JobContext:
    """The context of a job running `command` (default: a training script) with `memory`."""
    from frontdesk.spec.units import parse_memory

    res: dict[str, Any] = {"memory": parse_memory(memory) if memory is not None else None, **extra}
    spec: dict[str, Any] = {
        "command": command or ["python", "/home/alice/proj/train.py", "--epochs", "3"],
        "resources": {k: v for k, v in res.items() if v is not None},
    }
    if "script" in extra:
        spec = {"script": extra["script"], "resources": {"memory": res["memory"]}}
    return context_of(spec)
