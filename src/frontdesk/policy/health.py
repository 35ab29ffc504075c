"""Node health: readings in, a drain verdict out. Reading the sensors is the plug-in's job (I/O)."""

from __future__ import annotations

from dataclasses import dataclass

from frontdesk.policy.config import HealthConfig
from frontdesk.spec.units import format_bytes

__all__ = ["HealthReading", "Verdict", "evaluate"]


@dataclass(frozen=True)
class HealthReading:
    """What the checks saw on one node; None where a check did not run."""

    node: str
    gpu_temps_c: tuple[float, ...] = ()
    free_disk_bytes: int | None = None
    command_exit: int | None = None
    command_output: str = ""


@dataclass(frozen=True)
class Verdict:
    """Drain or not, which check, and the detail for the event."""

    node: str
    drained: bool
    check: str = ""
    detail: str = ""


def evaluate(reading: HealthReading, cfg: HealthConfig) -> Verdict:
    """The first failing check drains the node; running jobs finish, nothing new lands."""
    hot = [t for t in reading.gpu_temps_c if t > cfg.max_gpu_temp_c]
    if hot:
        return Verdict(
            reading.node,
            True,
            "gpu_temperature",
            f"GPU at {max(hot):.0f} C (limit {cfg.max_gpu_temp_c:.0f} C)",
        )
    if reading.free_disk_bytes is not None and reading.free_disk_bytes < cfg.min_free_disk:
        return Verdict(
            reading.node,
            True,
            "free_disk",
            f"{format_bytes(reading.free_disk_bytes)} free (minimum {format_bytes(cfg.min_free_disk)})",
        )
    if reading.command_exit not in (None, 0):
        tail = reading.command_output.strip().splitlines()[-1:] or [""]
        return Verdict(reading.node, True, "command", f"health command exited {reading.command_exit}: {tail[0]}"[:300])
    return Verdict(reading.node, False)
