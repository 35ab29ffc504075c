"""Classification of jobs that leave out `type`: the class and the reason, both recorded on the job."""

from __future__ import annotations

from frontdesk.policy.config import ClassifyConfig
from frontdesk.spec.units import format_duration

__all__ = ["classify"]


def classify(
    declared: str | None, cpus: int, gpus: int, walltime_s: float | None, cfg: ClassifyConfig
) -> tuple[str, str]:
    """(class, reason) for one request; a declared type wins."""
    if declared:
        return declared, f"declared type {declared}"
    wall = walltime_s if walltime_s else None
    wall_text = format_duration(int(wall)) if wall else "no walltime"
    if gpus >= cfg.training_min_gpus and (wall is None or wall > cfg.training_min_walltime):
        return "training", (
            f"{gpus} GPUs (>= {cfg.training_min_gpus}) and {wall_text} (> {format_duration(cfg.training_min_walltime)})"
        )
    if gpus == 0 and cpus >= cfg.hpc_min_cpus:
        return "hpc", f"{cpus} cores (>= {cfg.hpc_min_cpus}) and no GPU"
    if (
        cpus <= cfg.agent_max_cpus
        and gpus <= cfg.agent_max_gpus
        and wall is not None
        and wall <= cfg.agent_max_walltime
    ):
        return "agent", (
            f"small ({cpus} cores, {gpus} GPUs) and {wall_text} (<= {format_duration(cfg.agent_max_walltime)})"
        )
    if gpus:
        return "training", f"{gpus} GPUs and not small and short enough for agent"
    return cfg.default_class, f"no rule matched ({cpus} cores, {gpus} GPUs, {wall_text}): default"
