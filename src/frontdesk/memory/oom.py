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

__all__ = ["SHARED_FIX_FACTOR", "memory_suggestion"]


SHARED_FIX_FACTOR = 4
"""Another user's learned --mem counts for this job only up to this many times its own request."""


def _from_fix(lessons: Iterable[Lesson], requested: int | None, principal: str) -> tuple[int, str] | None:
    for lesson in lessons:
        change = ((lesson.fix or {}).get("changes") or {}).get("memory_bytes")
        if not (change and change[1] and (requested is None or change[1] > requested)):
            continue
        theirs = bool(principal) and lesson.created_by != principal
        if theirs and (requested is None or change[1] > SHARED_FIX_FACTOR * requested):
            continue  # one labmate's run (a lab or project lesson) never sets a far larger request for everyone
        ok_job = ((lesson.fix or {}).get("evidence") or [None])[-1]
        whose = f"{lesson.created_by}'s job" if theirs else "job"
        return int(change[1]), f"the fix learned from {whose} {ok_job}: it completed with {format_bytes(change[1])}"
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
    peak: int | None,
    requested: int | None,
    runs: Sequence[dict[str, Any]],
    lessons: Iterable[Lesson],
    principal: str = "",
) -> tuple[int, str]:
    """The --mem to suggest and the evidence it rests on (learned fix > completed sibling > the limit); with the
    principal, another user's fix is named as theirs and counts only up to SHARED_FIX_FACTOR times the request."""
    return (
        _from_fix(lessons, requested, principal)
        or _from_sibling(runs, requested)
        or suggest_oom_memory(peak, requested)
    )
