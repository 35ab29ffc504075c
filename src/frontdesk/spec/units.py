"""Memory sizes (`16G`, `512M`) and durations (`90s`, `10m`, `2h`, `1-00:00:00`, `HH:MM:SS`), both ways."""

from __future__ import annotations

import math
import re

from frontdesk.durations import parse_slurm_clock

__all__ = ["parse_memory", "parse_duration", "format_bytes", "format_duration"]

_MEM = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtp]?)(i?b?)\s*$", re.IGNORECASE | re.ASCII)
_MULT = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4, "p": 1024**5}
_DUR = re.compile(
    r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|secs|seconds?|m|min|mins|minutes?|h|hr|hrs|hours?|d|days?)?\s*$",
    re.IGNORECASE | re.ASCII,  # `٣s` (an Arabic-Indic 3) is no duration a scheduler reads
)
_DUR_MULT = {"s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_DURATION = 100 * 365 * 86400
"""The longest duration accepted (seconds): past it, stores and schedulers overflow."""
MAX_MEMORY = 2**60
"""The largest size accepted (bytes)."""


def parse_memory(value: str | int) -> int:
    """Bytes from `16G`, `512M`, `1.5GiB` or a plain number of bytes; raises ValueError."""
    if isinstance(value, bool):
        raise ValueError("expected a size such as 16G")
    if isinstance(value, int):
        if value < 0:
            raise ValueError("a size cannot be negative")
        return _max_memory(value)
    m = _MEM.match(str(value)) if len(str(value)) <= 100 else None
    if not m:
        raise ValueError(f"expected a size such as 512M or 16G, got {str(value)[:40]!r}")
    number, unit = float(m.group(1)), m.group(2).lower()
    return _max_memory(int(number * _MULT[unit]))


def _max_memory(n: int) -> int:
    if n > MAX_MEMORY:
        raise ValueError(f"a size of at most {MAX_MEMORY} bytes (1024P) is accepted")
    return n


def _seconds(x: float) -> int:
    """Whole seconds, a fraction rounding up (`0.5` is one second, not zero), within MAX_DURATION."""
    if not math.isfinite(x):
        raise ValueError("a duration must be a finite number")
    if x <= 0:
        raise ValueError("a duration must be positive")
    if x > MAX_DURATION:
        raise ValueError(f"a duration of at most {MAX_DURATION} seconds (100 years) is accepted")
    return math.ceil(x)


def parse_duration(value: str | int | float) -> int:
    """Seconds from `90s`, `10m`, `2h`, `1d`, `MM:SS`, `HH:MM:SS`, `D-HH:MM:SS` or a number of seconds."""
    if isinstance(value, bool):
        raise ValueError("expected a duration such as 10m")
    if isinstance(value, int | float):
        return _seconds(value)
    text = str(value).strip()
    if len(text) > 100:
        raise ValueError(f"expected a duration such as 90s, 10m or 2h, got {text[:40]!r}...")
    if ":" in text or re.match(r"^[0-9]+-", text):
        try:
            clock = parse_slurm_clock(text)  # the one Slurm clock parser (D-HH:MM:SS, HH:MM:SS, MM:SS)
        except ValueError:
            raise ValueError(f"expected HH:MM:SS or D-HH:MM:SS, got {str(value)[:40]!r}") from None
        total = _seconds(clock)
    else:
        m = _DUR.match(text)
        if not m:
            raise ValueError(f"expected a duration such as 90s, 10m or 2h, got {str(value)[:40]!r}")
        unit = (m.group(2) or "s")[0].lower()
        total = _seconds(float(m.group(1)) * _DUR_MULT[unit])
    return total


def format_bytes(n: int | None) -> str:
    """`1.5G`-style text for a byte count."""
    if n is None:
        return "?"
    for unit, size in (("T", 1024**4), ("G", 1024**3), ("M", 1024**2), ("K", 1024)):
        if n >= size:
            v = n / size
            return f"{v:.1f}{unit}".replace(".0" + unit, unit)
    return f"{n}B"


def format_duration(seconds: float | None) -> str:
    """`1h02m`, `4m05s` or `12.3s` for a number of seconds."""
    if seconds is None:
        return "?"
    if seconds < 60:
        return f"{seconds:.1f}s"
    s = int(round(seconds))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{sec:02d}s"
