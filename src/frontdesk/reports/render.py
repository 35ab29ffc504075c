"""Render a report as short text (at most `max_bytes`, 2 KB by default). Pure."""

from __future__ import annotations

from typing import Any

from frontdesk.jobs import JobState
from frontdesk.spec.units import format_bytes, format_duration

__all__ = ["render_text"]


def _usage_line(rep: dict[str, Any]) -> str:
    req, used = rep["requested"], rep["used"]
    parts = [f"cpus {req.get('cpus')}"]
    if used.get("cpu_seconds") is not None:
        parts[-1] += f" (cpu time {format_duration(used['cpu_seconds'])})"
    mem = f"mem req {format_bytes(req.get('memory_bytes'))}" if req.get("memory_bytes") else "mem req -"
    if used.get("peak_rss_bytes") is not None:
        mem += f", peak {format_bytes(used['peak_rss_bytes'])}"
    parts.append(mem)
    if req.get("gpus"):
        shared = req.get("gpu_shared") or {}
        asked = (
            format_bytes(shared.get("memory_bytes")) if shared.get("memory_bytes") else f"{shared.get('share')} of one"
        )
        gpu = f"gpu shared ({asked})" if shared else f"gpus {req['gpus']}"
        if used.get("gpu_util_percent") is not None:
            gpu += f" (util {used['gpu_util_percent']:.0f}%, mem {format_bytes(used.get('gpu_mem_peak_bytes'))})"
        parts.append(gpu)
    if req.get("walltime_s"):
        parts.append(f"time limit {format_duration(req['walltime_s'])}")
    return "; ".join(parts)


def _extra_lines(rep: dict[str, Any]) -> list[str]:
    """What plug-ins added: their `lines`, or the `text` of their `matched`/`lessons` entries (3 each at most)."""
    out = []
    for source, data in sorted((rep.get("extra") or {}).items()):
        if not isinstance(data, dict):
            continue
        texts = [str(x) for x in data.get("lines", [])]
        for key in ("matched", "lessons"):
            texts += [str(x["text"]) for x in data.get(key, []) if isinstance(x, dict) and x.get("text")]
        seen: set[str] = set()
        for text in texts:
            if text not in seen and len(seen) < 3:
                seen.add(text)
                out.append(f"{source}: {text}")
    return out


def render_text(rep: dict[str, Any], max_bytes: int = 2048) -> str:
    """The short text an agent reads: state, timings, usage vs request, cause and next step, log tails."""
    name = f" ({rep['name']})" if rep.get("name") else ""
    head = f"frontdesk job {rep['job_id']}{name}: {rep['state']}"
    if rep.get("exit_code") is not None and rep["state"] != JobState.COMPLETED:
        head += f" exit {rep['exit_code']}"
    if rep.get("signal"):
        head += f" signal {rep['signal']}"
    if (rep.get("attempts") or 1) > 1:
        head += f" after {rep['attempts']} attempts"
    ran = f"ran {format_duration(rep['run_s'])}" if rep.get("run_s") is not None else "did not run"
    lines = [head, f"waited {format_duration(rep.get('queue_wait_s'))}, {ran}", _usage_line(rep)]
    cls = rep.get("classification") or {}
    if cls.get("kind") not in (None, "ok"):
        lines.append(f"cause: {cls.get('summary')}")
        if cls.get("next_step"):
            lines.append(f"next: {cls['next_step']}")
    lines.extend(_extra_lines(rep))
    fixed = "\n".join(lines)
    tails: list[tuple[str, list[str]]] = [
        ("stderr", rep.get("stderr_tail") or []),
        ("stdout", rep.get("stdout_tail") or []),
    ]
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
