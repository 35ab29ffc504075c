"""Build a job's Report from its record, spec, backend status and log tails. Pure: no I/O, no clock."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from typing import Any

from frontdesk.jobs import JobState
from frontdesk.jobs.record import JobRecord
from frontdesk.reports.classify import Signature, classify, load_catalog
from frontdesk.reports.kinds import FailureKind
from frontdesk.reports.model import Classification, GpuShared, Report, Requested, Used
from frontdesk.spec.units import format_bytes, format_duration

__all__ = [
    "build_report",
    "classify_end",
    "round_memory",
    "summary_head",
    "suggest_memory",
    "suggest_oom_memory",
    "suggest_walltime",
    "tail_lines",
    "visible_text",
]

_ERROR_LINE = re.compile(
    r"(error|exception|fatal|traceback|killed|denied|not found|no such|failed|abort)", re.IGNORECASE
)


_CLASSIFY_BYTES = 32 * 1024
"""How much of each stream the classifier reads (stderr last: its final line is usually the decisive one)."""


_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
"""Terminal escape sequences a job prints (colours, cursor moves, `ESC]0;title BEL`): dropped from tails."""
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""Other control characters and bidi overrides: shown as `\\xNN`, never sent raw to a terminal or an agent."""


def visible_text(text: str) -> str:
    """A job's output as it reads: escape sequences dropped, `\\r` a line break, other control characters
    shown as `\\xNN` (they reach an agent's context and a person's terminal through the report)."""
    text = _ANSI.sub("", text).replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub(lambda m: ascii(m.group())[1:-1], text)


def tail_lines(text: str, n: int, width: int = 200) -> list[str]:
    """The last n non-empty lines of text (see `visible_text`), each cut to `width` characters."""
    lines = [ln.rstrip() for ln in visible_text(text).splitlines() if ln.strip()]
    head = width * 2 // 3
    # Long lines keep both ends: the start says what it is, the end often holds the detail.
    return [ln if len(ln) <= width else ln[:head] + " … " + ln[-(width - head - 3) :] for ln in lines[-n:]]


def suggest_memory(peak: int | None, requested: int | None) -> int:
    """A memory request with headroom over what was seen: 1.5× the larger of peak and request, in whole G/M."""
    return round_memory(int(max(peak or 0, requested or 0, 64 * 1024**2) * 1.5))


def round_memory(want: int) -> int:
    """Bytes rounded up to whole gigabytes (1G and over) or megabytes."""
    g = 1024**3
    return ((want + g - 1) // g) * g if want >= g else ((want + 1024**2 - 1) // 1024**2) * 1024**2


def suggest_oom_memory(peak: int | None, requested: int | None) -> tuple[int, str]:
    """The --mem that should be enough after an out-of-memory ending, and why.

    A job killed at its limit peaks at the limit: its peak says nothing about what it needed, so the
    suggestion doubles the limit; a peak well under the limit (an allocation that failed) gets 1.5x it.
    """
    if requested and (peak is None or peak >= requested * 0.9):
        return round_memory(2 * requested), "twice the limit: killed at its limit, the job needed more than it showed"
    return suggest_memory(peak, requested), "1.5x the peak"


def suggest_walltime(elapsed: float | None, requested: int | None) -> int:
    """Twice the walltime that ran out, rounded up to a whole minute."""
    base = max(elapsed or 0, requested or 0, 60)
    return math.ceil(base * 2 / 60) * 60


def _last_error(lines: Sequence[str]) -> str | None:
    for line in reversed(lines):
        if _ERROR_LINE.search(line):
            return line.strip()
    return lines[-1].strip() if lines else None


def _by_state(state: str, sig: Signature, reason: str | None, res: _Usage) -> tuple[str, str] | None:
    """Summary and next step that the end state (and its figures) decide, or None."""
    if state == JobState.OUT_OF_MEMORY and reason and reason.startswith("GPU memory"):  # a shared GPU's cap
        return reason, "resubmit with a larger resources.gpu.memory, or a whole GPU (gpus: 1), or reduce the batch size"
    if state == JobState.OUT_OF_MEMORY or (sig.kind == FailureKind.HOST_OOM and res.peak):
        sug, why = suggest_oom_memory(res.peak, res.mem_req)
        return (
            f"out of memory: peak {format_bytes(res.peak)} against a limit of {format_bytes(res.mem_req)}",
            f"resubmit with --mem {format_bytes(sug)} ({why}), or reduce the working set",
        )
    if state == JobState.TIMEOUT:
        sug_s = suggest_walltime(res.run_s, res.wall_req)
        return (
            f"walltime ran out after {format_duration(res.run_s)} (limit {format_duration(res.wall_req)})",
            f"resubmit with --time {format_duration(sug_s)} or checkpoint and resume",
        )
    if state == JobState.CANCELLED:
        return f"cancelled{': ' + reason if reason else ''}", ""
    if state == JobState.DEPENDENCY_NEVER_SATISFIED:
        return reason or "a dependency did not complete", _advice(sig)
    if state in (JobState.NODE_FAIL, JobState.BOOT_FAIL):
        return reason or "the node running the job failed", _advice(sig)
    if state == JobState.PREEMPTED:
        return "preempted by a higher-priority job", _advice(sig)
    return None


def summary_head(kind: str, exit_code: int | None, signal: int | None) -> str:
    """The start of a failure's summary, before `: <the log line>` (reports/without_logs.py cuts there)."""
    head = f"killed by signal {signal}" if signal else f"exit code {exit_code}"
    info = load_catalog().kinds.get(kind)
    if info is not None and kind != FailureKind.EXIT_ERROR:
        head += f" ({info.summary})"
    return head


def _advice(sig: Signature) -> str:
    info = load_catalog().kinds.get(sig.kind)
    return info.advice(sig.detail) if info else ""


class _Usage:
    """The figures an ending's advice is computed from."""

    def __init__(self, peak: int | None, mem_req: int | None, run_s: float | None, wall_req: int | None) -> None:
        self.peak, self.mem_req, self.run_s, self.wall_req = peak, mem_req, run_s, wall_req


def classify_end(
    state: str,
    exit_code: int | None,
    signal: int | None,
    *,
    peak: int | None,
    mem_req: int | None,
    run_s: float | None,
    wall_req: int | None,
    stderr_tail: Sequence[str],
    stdout_tail: Sequence[str],
    reason: str | None,
    log_text: str | None = None,
) -> Classification:
    """The ending's kind (`FailureKind`), a one-line summary and the next step, from the state and the log."""
    if state == JobState.COMPLETED:
        return Classification(kind=FailureKind.OK.value, summary="completed successfully", next_step="", detail="")
    text = log_text if log_text is not None else "\n".join([*stderr_tail, *stdout_tail])
    sig = classify(text, state, exit_code)
    decided = _by_state(state, sig, reason, _Usage(peak, mem_req, run_s, wall_req))
    if decided is None:
        err = sig.line or _last_error(stderr_tail) or _last_error(stdout_tail)
        head = summary_head(sig.kind, exit_code, signal)
        decided = (f"{head}: {err}" if err else head)[:300], _advice(sig)
    return Classification(kind=sig.kind, summary=decided[0], next_step=decided[1], detail=sig.detail)


def _requested(res: dict[str, Any]) -> Requested:
    """What the job asked for, as the report's `requested` names it (`gpu_shared` only for a share of a GPU)."""
    gpu = res.get("gpu")
    shared = None
    if isinstance(gpu, dict) and (gpu.get("memory") is not None or gpu.get("share") is not None):
        shared = GpuShared(memory_bytes=gpu.get("memory"), share=gpu.get("share"))
    return Requested(
        cpus=res.get("cpus", 1),
        memory_bytes=res.get("memory"),
        gpus=res.get("gpus", 0),
        walltime_s=res.get("walltime"),
        gpu_shared=shared,
    )


def _used(usage: str | None) -> dict[str, int | float | None]:
    """The usage figures the record holds; one that is not a number (a backend's bad reading) is unknown."""
    used: dict[str, int | float | None] = dict.fromkeys(Used.model_fields)
    try:
        stored = json.loads(usage) if usage else {}
    except ValueError:
        stored = {}
    for key, value in stored.items() if isinstance(stored, dict) else ():
        if key in used and isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            used[key] = value
    return used


def _suspended(usage: str | None) -> float | None:
    """Seconds the job spent suspended, as the backend counted them (None: never suspended, or unreadable)."""
    try:
        value = json.loads(usage).get("suspended_s") if usage else None
    except (ValueError, AttributeError):
        return None
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value >= 0:
        return float(value)
    return None


def build_report(
    job: JobRecord,
    *,
    stdout_text: str,
    stderr_text: str,
    redact: Callable[[str], str],
    lines: int = 10,
) -> Report:
    """The ended job's report from its record and log text (without `text`, which render.py makes)."""
    res = job.spec_data().get("resources") or {}
    started, ended, submitted = job.started_at, job.ended_at, job.submitted_at
    run_s = (ended - started) if started and ended else None
    suspended = _suspended(job.usage)
    ran = max(0.0, run_s - suspended) if run_s is not None and suspended else run_s  # what the time limit counts
    # clamped: Slurm's start times are whole seconds, so a prompt start can read as before submission
    begun = started or ended
    wait_s = max(0.0, begun - submitted) if submitted and begun else None
    # Redacted whole, before the line limits cut anything: a key's body lines are known by their BEGIN line,
    # and a secret cut in half by the width limit would no longer be recognised.
    stdout_text, stderr_text = redact(visible_text(stdout_text)), redact(visible_text(stderr_text))
    out_tail = tail_lines(stdout_text, lines)
    err_tail = tail_lines(stderr_text, lines)
    used = _used(job.usage)
    peak = used["peak_rss_bytes"]
    cls = classify_end(
        job.state,
        job.exit_code,
        job.signal,
        peak=None if peak is None else int(peak),
        mem_req=res.get("memory"),
        run_s=ran,
        wall_req=res.get("walltime"),
        stderr_tail=err_tail,
        stdout_tail=out_tail,
        reason=job.reason,
        log_text=stdout_text[-_CLASSIFY_BYTES:] + "\n" + stderr_text[-_CLASSIFY_BYTES:],
    )
    return Report(
        job_id=job.id,
        name=job.name,
        state=job.state,
        exit_code=job.exit_code,
        signal=job.signal,
        attempts=job.attempt,
        backend=job.backend,
        backend_id=job.backend_id,
        session=job.session,
        queue_wait_s=round(wait_s, 3) if wait_s is not None else None,
        run_s=round(run_s, 3) if run_s is not None else None,
        suspended_s=round(suspended, 3) if suspended is not None else None,
        requested=_requested(res),
        used=Used(**used),
        classification=cls.model_copy(update={k: redact(getattr(cls, k)) for k in type(cls).model_fields}),
        stdout_tail=tuple(out_tail),
        stderr_tail=tuple(err_tail),
    )
