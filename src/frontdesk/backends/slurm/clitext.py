"""How Slurm's commands print states and times, shared by the shims and the gateway that renders for them (pure).

The gateway's Slurm plug-in renders `squeue` answers with the same code the shims run, so it lives here, below
both: the plug-in must not import the edge.
"""

from __future__ import annotations

from collections.abc import Sequence

from frontdesk.durations import parse_slurm_clock

__all__ = [
    "LONG_STATES",
    "SHORT_STATES",
    "ShimArgs",
    "fmt_duration",
    "short_state",
    "split_list",
    "user_name",
]

SHORT_STATES = {
    "PENDING": "PD",
    "RUNNING": "R",
    "SUSPENDED": "S",
    "COMPLETING": "CG",
    "COMPLETED": "CD",
    "CONFIGURING": "CF",
    "CANCELLED": "CA",
    "FAILED": "F",
    "TIMEOUT": "TO",
    "PREEMPTED": "PR",
    "NODE_FAIL": "NF",
    "BOOT_FAIL": "BF",
    "DEADLINE": "DL",
    "OUT_OF_MEMORY": "OOM",
    "REQUEUED": "RQ",
    "REQUEUE_HOLD": "RH",
    "REQUEUE_FED": "RF",
    "RESIZING": "RS",
    "RESV_DEL_HOLD": "RD",
    "REVOKED": "RV",
    "SIGNALING": "SI",
    "SPECIAL_EXIT": "SE",
    "STAGE_OUT": "SO",
    "STOPPED": "ST",
}
LONG_STATES = {v: k for k, v in SHORT_STATES.items()}


class ShimArgs(Exception):
    """Raised by a shim's parser for a flag it does not handle: the real command gets the whole line."""


def user_name(user_id: str) -> str:
    """`root` from scontrol's `root(0)`."""
    return user_id.split("(", 1)[0]


def split_list(values: Sequence[str] | None) -> list[str]:
    """Comma lists given once or many times (`-j 1,2 -j 3`)."""
    out: list[str] = []
    for v in values or ():
        out += [x.strip() for x in v.split(",") if x.strip()]
    return out


def _to_seconds(text: str) -> int | None:
    text = text.strip()
    if not text or text in ("UNLIMITED", "INVALID", "N/A", "NOT_SET"):
        return None
    try:
        return int(parse_slurm_clock(text, bare_unit=1))
    except ValueError:
        return None


def fmt_duration(raw: str, unlimited: str = "UNLIMITED") -> str:
    """Slurm's compact time: `0:05`, `1:00:00`, `2-00:00:00` from scontrol's `00:00:05`."""
    secs = _to_seconds(raw)
    if secs is None:
        return unlimited if raw.strip() == "UNLIMITED" else raw.strip() or "N/A"
    days, rest = divmod(secs, 86400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    if days:
        return f"{days}-{h:02d}:{m:02d}:{s:02d}"
    if h:
        return f"{h}:{m:02d}:{s:02d}"
    return f"{m}:{s:02d}"


def short_state(state: str) -> str:
    """`PD` for PENDING (squeue %t)."""
    word = state.split(" ", 1)[0]
    return SHORT_STATES.get(word, word[:2])
