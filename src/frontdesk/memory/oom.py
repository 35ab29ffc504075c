"""How much memory to ask for after an out-of-memory ending, and why. Pure.

A job killed at its limit peaks at the limit: its own peak says nothing of what it needed. Better
evidence wins: the fix a lesson learned (a larger request that then completed), else the peak of a
completed run of the same command, else a multiple of the limit (see `reports.build.suggest_oom_memory`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from frontdesk.jobs import JobState
from frontdesk.memory.lesson import Lesson
from frontdesk.reports.build import round_memory, suggest_oom_memory
from frontdesk.spec.units import format_bytes

__all__ = ["memory_suggestion"]


def _from_fix(lessons: Iterable[Lesson], requested: int | None) -> tuple[int, str] | None:
    for lesson in lessons:
        change = ((lesson.fix or {}).get("changes") or {}).get("memory_bytes")
        if change and change[1] and (requested is None or change[1] > requested):
            ok_job = ((lesson.fix or {}).get("evidence") or [None])[-1]
            return int(change[1]), f"the fix learned from job {ok_job}: it completed with {format_bytes(change[1])}"
    return None


def _from_sibling(runs: Sequence[dict[str, Any]], requested: int | None) -> tuple[int, str] | None:
    done = [r for r in runs if r.get("state") == JobState.COMPLETED and (r.get("used") or {}).get("peak_rss_bytes")]
    if not done:
        return None
    best = max(done, key=lambda r: int(r["used"]["peak_rss_bytes"]))
    peak = int(best["used"]["peak_rss_bytes"])
    want = round_memory(int(peak * 1.5))
    if requested is not None and want <= requested:
        return None  # that run needed less than this one was given: not evidence for this ending
    return want, f"1.5x the peak of completed job {best['job_id']} ({format_bytes(peak)})"


def memory_suggestion(
    peak: int | None, requested: int | None, runs: Sequence[dict[str, Any]], lessons: Iterable[Lesson]
) -> tuple[int, str]:
    """The --mem to suggest and the evidence it rests on (learned fix > completed sibling > the limit)."""
    return _from_fix(lessons, requested) or _from_sibling(runs, requested) or suggest_oom_memory(peak, requested)
