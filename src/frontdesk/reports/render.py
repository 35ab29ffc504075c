"""Render a report as short text (at most `max_bytes`, 2 KB by default). Pure."""

from __future__ import annotations

from frontdesk.jobs import JobState
from frontdesk.reports.model import Report
from frontdesk.spec.units import format_bytes, format_duration

__all__ = ["render_text"]


def _usage_line(rep: Report) -> str:
    req, used = rep.requested, rep.used
    parts = [f"cpus {req.cpus}"]
    if used.cpu_seconds is not None:
        parts[-1] += f" (cpu time {format_duration(used.cpu_seconds)})"
    mem = f"mem req {format_bytes(req.memory_bytes)}" if req.memory_bytes else "mem req -"
    if used.peak_rss_bytes is not None:
        mem += f", peak {format_bytes(int(used.peak_rss_bytes))}"
    parts.append(mem)
    if req.gpus:
        shared = req.gpu_shared
        if shared is None:
            gpu = f"gpus {req.gpus}"
        else:
            asked = format_bytes(shared.memory_bytes) if shared.memory_bytes else f"{shared.share} of one"
            gpu = f"gpu shared ({asked})"
        if used.gpu_util_percent is not None:
            peak = used.gpu_mem_peak_bytes
            gpu += f" (util {used.gpu_util_percent:.0f}%, mem {format_bytes(None if peak is None else int(peak))})"
        parts.append(gpu)
    if req.walltime_s:
        parts.append(f"time limit {format_duration(req.walltime_s)}")
    return "; ".join(parts)


def _extra_lines(rep: Report) -> list[str]:
    """What plug-ins added: each section's `notes()` (3 each at most), by plug-in name."""
    out = []
    for source, section in sorted(rep.extra.items()):
        seen: set[str] = set()
        for text in section.notes():
            if text not in seen and len(seen) < 3:
                seen.add(text)
                out.append(f"{source}: {text}")
    return out


def render_text(rep: Report, max_bytes: int = 2048) -> str:
    """The short text an agent reads: state, timings, usage vs request, cause and next step, log tails."""
    name = f" ({rep.name})" if rep.name else ""
    head = f"frontdesk job {rep.job_id}{name}: {rep.state}"
    if rep.exit_code is not None and rep.state != JobState.COMPLETED:
        head += f" exit {rep.exit_code}"
    if rep.signal:
        head += f" signal {rep.signal}"
    if (rep.attempts or 1) > 1:
        head += f" after {rep.attempts} attempts"
    ran = f"ran {format_duration(rep.run_s)}" if rep.run_s is not None else "did not run"
    if rep.suspended_s:
        ran += f" ({format_duration(rep.suspended_s)} of it suspended for trials)"
    lines = [head, f"waited {format_duration(rep.queue_wait_s)}, {ran}", _usage_line(rep)]
    cls = rep.classification
    if cls.kind != "ok":
        lines.append(f"cause: {cls.summary}")
        if cls.next_step:
            lines.append(f"next: {cls.next_step}")
    lines.extend(_extra_lines(rep))
    fixed = "\n".join(lines)
    tails: list[tuple[str, tuple[str, ...]]] = [("stderr", rep.stderr_tail), ("stdout", rep.stdout_tail)]
    # Fill what is left of the budget with log tails, newest lines kept, stderr first.
    budget = max_bytes - len(fixed.encode()) - 1
    blocks = []
    for label, tail in tails:
        if not tail or budget <= len(label) + 10:
            continue
        kept: list[str] = []
        used = len(f"--- {label} (last lines) ---\n".encode())
        for line in reversed(tail):
            cost = len(line.encode()) + 3
            if used + cost > budget:
                break
            kept.insert(0, line)
            used += cost
        if kept:
            blocks.append(f"--- {label} (last {len(kept)} lines) ---\n" + "\n".join("  " + k for k in kept))
            budget -= used
    text = fixed + ("\n" + "\n".join(blocks) if blocks else "")
    encoded = text.encode()
    if len(encoded) > max_bytes:
        text = encoded[: max_bytes - 3].decode(errors="ignore") + "..."
    return text
