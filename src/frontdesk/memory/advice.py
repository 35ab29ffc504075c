"""Resource advice: requested versus used, per command template, from a principal's finished jobs. Pure."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from frontdesk.jobs import JobState
from frontdesk.spec.units import format_bytes, format_duration

__all__ = ["advise", "advise_template"]

_GIB = 1024**3
_MIB = 1024**2


def _round_memory(n: float) -> int:
    step = _GIB if n >= _GIB else 256 * _MIB
    return int(math.ceil(n / step) * step)


def advise_template(runs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Advice for one template from its runs (newest first), or None when there is nothing to say."""
    done = [r for r in runs if r["state"] == JobState.COMPLETED]
    if not done:
        return None
    req = done[0]["requested"]
    lines: list[str] = []
    suggest: dict[str, Any] = {}
    peaks = [r["used"].get("peak_rss_bytes") for r in done if r["used"].get("peak_rss_bytes")]
    mem = req.get("memory_bytes")
    too_small = [r["requested"].get("memory_bytes") or 0 for r in runs if r["state"] == JobState.OUT_OF_MEMORY]
    if peaks and mem:
        peak = max(peaks)
        want = max(_round_memory(peak * 1.3), 256 * _MIB)
        if too_small and want <= max(too_small):
            want = _round_memory(max(too_small) * 1.5)
        if peak < 0.5 * mem and want < mem:
            suggest["memory_bytes"] = want
            lines.append(
                f"asked for {format_bytes(mem)} memory, used at most {format_bytes(peak)}: "
                f"request {format_bytes(suggest['memory_bytes'])}"
            )
    runs_s = [r["used"].get("run_s") for r in done if r["used"].get("run_s")]
    wall = req.get("walltime_s")
    if runs_s and wall:
        longest = max(runs_s)
        want = max(int(math.ceil(longest * 2 / 60) * 60), 60)
        if longest < 0.25 * wall and want < wall:
            suggest["walltime_s"] = want
            lines.append(
                f"asked for {format_duration(wall)}, ran at most {format_duration(longest)}: "
                f"request {format_duration(suggest['walltime_s'])}"
            )
    gpus = int(req.get("gpus") or 0)
    utils = [r["used"].get("gpu_util_percent") for r in done if r["used"].get("gpu_util_percent") is not None]
    if gpus > 1 and utils:
        used = max(1, math.ceil(gpus * max(utils) / 100))
        if used < gpus:
            suggest["gpus"] = used
            lines.append(f"asked for {gpus} GPUs, used {used}")
    cpus = int(req.get("cpus") or 1)
    effective = [
        r["used"]["cpu_seconds"] / r["used"]["run_s"]
        for r in done
        if r["used"].get("cpu_seconds") and r["used"].get("run_s")
    ]
    if cpus > 1 and effective:
        used = max(1, math.ceil(max(effective)))
        if used <= cpus // 2:
            suggest["cpus"] = used
            lines.append(f"asked for {cpus} CPUs, kept {max(effective):.1f} busy: request {used}")
    if not lines:
        return None
    return {"runs": len(runs), "completed": len(done), "requested": req, "suggest": suggest, "lines": lines}


def advise(runs: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Advice for every template in a principal's runs (each entry names its template)."""
    by_template: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in runs:
        by_template[r["template"]].append(r)
    out = []
    for template, items in by_template.items():
        advice = advise_template(items)
        if advice:
            out.append({"template": template, "application": items[0].get("application", ""), **advice})
    return out
