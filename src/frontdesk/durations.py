"""The one parser of Slurm-style clock durations: `M`, `M:S`, `H:M:S`, `D-H`, `D-H:M`, `D-H:M:S`.

Slurm's input rules (sbatch --time) also read everything Slurm prints (`MM:SS`, `HH:MM:SS`, `D-HH:MM:SS`,
sacct's `MM:SS.mmm`). A bare number is minutes for Slurm input; readers of Slurm's output pass
`bare_unit=1`. Stdlib only: the shims and the guard import it on their hot path.
"""

from __future__ import annotations

import re

__all__ = ["NO_LIMIT", "parse_slurm_clock"]

NO_LIMIT = frozenset({"UNLIMITED", "INFINITE", "INVALID", "N/A", "NOT_SET", "NONE", "(NULL)", ""})
"""What Slurm prints where there is no duration (callers map these to None)."""

_CLOCK = re.compile(r"^(?:(\d{1,9})-)?(\d{1,9}(?:\.\d+)?)(?::(\d{1,9}(?:\.\d+)?))?(?::(\d{1,9}(?:\.\d+)?))?$", re.ASCII)


def parse_slurm_clock(text: str, *, bare_unit: int = 60) -> float:
    """Seconds from a Slurm clock duration; raises ValueError (also for NO_LIMIT words)."""
    m = _CLOCK.match(text.strip()) if len(text) <= 64 else None
    if m is None:
        raise ValueError(f"expected [D-]HH:MM:SS, MM:SS or minutes, got {text[:40]!r}")
    days, a, b, c = m.groups()
    raw = [x for x in (a, b, c) if x is not None]
    if any("." in x for x in raw[:-1]):
        raise ValueError(f"only the seconds may have a fraction, got {text[:40]!r}")
    fields = [float(x) for x in raw]
    if days is not None:  # D-H, D-H:M, D-H:M:S
        fields += [0.0] * (3 - len(fields))
        hours, minutes, seconds = fields
        return int(days) * 86400 + hours * 3600 + minutes * 60 + seconds
    if len(fields) == 1:
        return fields[0] * bare_unit
    if len(fields) == 2:
        return fields[0] * 60 + fields[1]
    return fields[0] * 3600 + fields[1] * 60 + fields[2]
