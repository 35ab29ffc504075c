"""Build a job's Report from its record, spec, backend status and log tails. Pure: no I/O, no clock."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any

from frontdesk.spec.units import format_bytes, format_duration

__all__ = ["build_report", "classify_end", "suggest_memory", "suggest_walltime", "tail_lines"]

_ERROR_LINE = re.compile(
    r"(error|exception|fatal|traceback|killed|denied|not found|no such|failed|abort)", re.IGNORECASE
)


def tail_lines(text: str, n: int, width: int = 200) -> list[str]:
    """The last n non-empty lines of text, each cut to `width` characters."""
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    head = width * 2 // 3
    # Long lines keep both ends: the start says what it is, the end often holds the detail.
    return [ln if len(ln) <= width else ln[:head] + " … " + ln[-(width - head - 3) :] for ln in lines[-n:]]


def suggest_memory(peak: int | None, requested: int | None) -> int:
    """A memory request with headroom over what was seen: 1.5× the larger of peak and request, in whole G/M."""
    base = max(peak or 0, requested or 0, 64 * 1024**2)
    want = int(base * 1.5)
    g = 1024**3
    return ((want + g - 1) // g) * g if want >= g else ((want + 1024**2 - 1) // 1024**2) * 1024**2


def suggest_walltime(elapsed: float | None, requested: int | None) -> int:
    """Twice the walltime that ran out, rounded up to a whole minute."""
    base = max(elapsed or 0, requested or 0, 60)
    return math.ceil(base * 2 / 60) * 60


def _last_error(lines: Sequence[str]) -> str | None:
    for line in reversed(lines):
        if _ERROR_LINE.search(line):
            return line.strip()
    return lines[-1].strip() if lines else None


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
) -> dict[str, str]:
    """One-line failure classification with a suggested next step for the common cases."""
    if state == "COMPLETED":
        return {"kind": "ok", "summary": "completed successfully", "next_step": ""}
    if state == "OUT_OF_MEMORY":
        sug = suggest_memory(peak, mem_req)
        return {
            "kind": "oom",
            "summary": f"out of memory: peak {format_bytes(peak)} against a limit of {format_bytes(mem_req)}",
            "next_step": f"resubmit with --mem {format_bytes(sug)} (or reduce batch size / data in memory)",
        }
    if state == "TIMEOUT":
        sug = suggest_walltime(run_s, wall_req)
        return {
            "kind": "timeout",
            "summary": f"walltime ran out after {format_duration(run_s)} (limit {format_duration(wall_req)})",
            "next_step": f"resubmit with --time {format_duration(sug)} or checkpoint and resume",
        }
    if state == "CANCELLED":
        return {"kind": "cancelled", "summary": f"cancelled{': ' + reason if reason else ''}", "next_step": ""}
    if state == "DEPENDENCY_NEVER_SATISFIED":
        return {
            "kind": "dependency",
            "summary": reason or "a dependency did not complete",
            "next_step": "fix and resubmit the failed dependency, then this job",
        }
    if state in ("NODE_FAIL", "BOOT_FAIL"):
        return {
            "kind": "node_fail",
            "summary": reason or "the node running the job failed",
            "next_step": "resubmit; the failure was not the job's",
        }
    if state == "PREEMPTED":
        return {
            "kind": "preempted",
            "summary": "preempted by a higher-priority job",
            "next_step": "resubmit, or checkpoint so a preemption costs less",
        }
    err = _last_error(stderr_tail) or _last_error(stdout_tail)
    if signal:
        summary = f"killed by signal {signal}"
    else:
        summary = f"exit code {exit_code}"
    if err:
        summary += f": {err}"
    return {
        "kind": "signal" if signal else "exit",
        "summary": summary[:300],
        "next_step": "read the error line above; fix the cause and resubmit",
    }


def build_report(
    job: dict[str, Any],
    *,
    stdout_text: str,
    stderr_text: str,
    attempts: int,
    usage: dict[str, Any] | None,
    redact: Callable[[str], str],
    lines: int = 10,
) -> dict[str, Any]:
    """The report's JSON form (without `text`, which render.py adds)."""
    spec = job["spec"]
    res = spec.get("resources") or {}
    started, ended, submitted = job.get("started_at"), job.get("ended_at"), job.get("submitted_at")
    run_s = (ended - started) if started and ended else None
    # clamped: Slurm's start times are whole seconds, so a prompt start can read as before submission
    wait_s = max(0.0, (started or ended) - submitted) if submitted and (started or ended) else None
    # Redacted whole, before the line limits cut anything: a key's body lines are known by their BEGIN line,
    # and a secret cut in half by the width limit would no longer be recognised.
    out_tail = tail_lines(redact(stdout_text), lines)
    err_tail = tail_lines(redact(stderr_text), lines)
    used = {"cpu_seconds": None, "peak_rss_bytes": None, "gpu_util_percent": None, "gpu_mem_peak_bytes": None}
    used.update({k: v for k, v in (usage or {}).items() if k in used})
    cls = classify_end(
        job["state"],
        job.get("exit_code"),
        job.get("signal"),
        peak=used["peak_rss_bytes"],
        mem_req=res.get("memory"),
        run_s=run_s,
        wall_req=res.get("walltime"),
        stderr_tail=err_tail,
        stdout_tail=out_tail,
        reason=job.get("reason"),
    )
    return {
        "job_id": job["id"],
        "name": job.get("name"),
        "state": job["state"],
        "exit_code": job.get("exit_code"),
        "signal": job.get("signal"),
        "attempts": attempts,
        "backend": job.get("backend"),
        "backend_id": job.get("backend_id"),
        "session": job.get("session"),
        "queue_wait_s": round(wait_s, 3) if wait_s is not None else None,
        "run_s": round(run_s, 3) if run_s is not None else None,
        "requested": {
            "cpus": res.get("cpus", 1),
            "memory_bytes": res.get("memory"),
            "gpus": res.get("gpus", 0),
            "walltime_s": res.get("walltime"),
        },
        "used": used,
        "classification": {k: redact(v) for k, v in cls.items()},
        "stdout_tail": out_tail,
        "stderr_tail": err_tail,
        "extra": {},
    }
