"""Standard Workload Format (SWF) traces: the machine from the header, explicit cleaning, a report of both.

The default replay is exact: the trace's own machine (`MaxProcs` processors, split over `MaxNodes` nodes when
it divides evenly), jobs wider than it refused and counted. Cleaning is explicit and reported: jobs of unknown
runtime or width are always dropped; zero-runtime jobs are dropped unless kept; a requested time below the
runtime is extended to the runtime (the usual choice), dropped, or kept (then the job is killed at its limit).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from enum import StrEnum

__all__ = [
    "MAX_FIELD",
    "MAX_NODES",
    "MAX_SWF_BYTES",
    "MAX_SWF_LINES",
    "Cleaning",
    "Machine",
    "SwfReport",
    "Underrequested",
    "clean_swf",
    "machine_of",
    "read_header",
]

MAX_SWF_BYTES = 256 << 20
"""The most an SWF file may hold, inflated (a gzip bomb stops here, not in memory)."""
MAX_SWF_LINES = 2_000_000
"""The most lines a trace may have: loading costs about 1.3 KB a job before the replay starts."""
MAX_NODES = 100_000
"""The most nodes a replayed machine may have (one object each; 10^5 nodes cost seconds a pass)."""
MAX_FIELD = 1e12
"""The largest magnitude of any SWF field (seconds, processors, ids): NaN, inf and 1e308 are refused."""


class Underrequested(StrEnum):
    """What to do with a job whose requested time is below its runtime."""

    EXTEND = "extend"
    DROP = "drop"
    KEEP = "keep"


@dataclass(frozen=True)
class Cleaning:
    """The cleaning options, all explicit (the defaults are the usual ones)."""

    drop_zero_runtime: bool = True
    underrequested: Underrequested = Underrequested.EXTEND


@dataclass(frozen=True)
class Machine:
    """A processor-pool machine: `procs` processors on `nodes` equal nodes; `source` says where it came from."""

    procs: int
    nodes: int = 1
    source: str = "flag"

    def __post_init__(self) -> None:
        if self.procs <= 0 or self.nodes <= 0 or self.procs % self.nodes:
            raise ValueError(f"bad machine: {self.procs} processors on {self.nodes} nodes (must divide evenly)")
        if self.nodes > MAX_NODES:
            raise ValueError(f"bad machine: {self.nodes} nodes ({self.source}), more than {MAX_NODES:,}")


@dataclass
class SwfReport:
    """What the reader kept, dropped and refused, and on which machine."""

    machine: Machine
    cleaning: Cleaning
    lines: int = 0
    kept: int = 0
    unknown: int = 0
    """Unknown runtime or width (always dropped)."""
    zero_runtime: int = 0
    underrequested: int = 0
    no_request: int = 0
    """No requested time: the runtime stands in for it."""
    too_wide: int = 0
    """Wider than the machine: refused."""
    notes: list[str] = field(default_factory=list)

    def lines_text(self) -> list[str]:
        """The human-readable report (printed above the table)."""
        m, c = self.machine, self.cleaning
        zero = "dropped" if c.drop_zero_runtime else "kept"
        return [
            f"machine: {m.procs} processors on {m.nodes} node(s) ({m.source})",
            f"jobs: {self.lines} read, {self.kept} replayed; dropped: {self.unknown} unknown runtime/width, "
            f"{self.zero_runtime} zero-runtime ({zero}), {self.underrequested} requested time < runtime "
            f"({c.underrequested.value}), {self.too_wide} wider than the machine (refused); "
            f"{self.no_request} without a requested time (runtime used)",
        ]

    def to_json(self) -> dict[str, object]:
        """The report as JSON (`frontdesk simulate --json`)."""
        return {
            "machine": {"procs": self.machine.procs, "nodes": self.machine.nodes, "source": self.machine.source},
            "cleaning": {
                "drop_zero_runtime": self.cleaning.drop_zero_runtime,
                "underrequested": self.cleaning.underrequested.value,
            },
            "lines": self.lines,
            "kept": self.kept,
            "unknown": self.unknown,
            "zero_runtime": self.zero_runtime,
            "underrequested": self.underrequested,
            "no_request": self.no_request,
            "too_wide": self.too_wide,
        }


_HEADER = re.compile(r"^\s*;\s*(\w+)\s*:\s*(.*?)\s*$")


def read_header(text: str) -> dict[str, str]:
    """The `; Key: value` lines at the top of an SWF file."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line.lstrip().startswith(";"):
            break
        m = _HEADER.match(line)
        if m:
            out.setdefault(m.group(1), m.group(2))
    return out


def _int(header: dict[str, str], key: str) -> int:
    m = re.match(r"\d+", header.get(key, ""))
    return int(m.group(0)) if m else 0


def machine_of(header: dict[str, str], widest: int) -> Machine:
    """The trace's own machine: MaxProcs (else MaxNodes, else the widest job) on MaxNodes nodes if it divides."""
    procs, nodes = _int(header, "MaxProcs"), _int(header, "MaxNodes")
    if procs:
        return Machine(procs, nodes if nodes and procs % nodes == 0 else 1, "header MaxProcs/MaxNodes")
    if nodes:
        return Machine(nodes, nodes, "header MaxNodes")
    return Machine(max(1, widest), 1, "widest job (no MaxProcs/MaxNodes header)")


@dataclass(frozen=True)
class SwfRow:
    """The fields of one SWF line the simulator uses (-1: unknown)."""

    number: int
    submit: float
    runtime: float
    procs: int
    requested: float
    memory_kb: float
    status: int
    user: int
    group: int
    executable: int


def _fields(line: str) -> list[float]:
    """The first 18 fields of a job line: ASCII decimal numbers, finite, at most MAX_FIELD in magnitude."""
    fields = line.split()
    if len(fields) < 18:
        raise ValueError(f"SWF line has {len(fields)} fields, expected 18: {line[:60]!r}")
    try:
        # float() alone takes full-width digits and 1_000: neither is SWF
        if not line.isascii() or "_" in line:
            raise ValueError
        f = [float(x) for x in fields[:18]]
    except ValueError:
        raise ValueError(f"SWF line has a non-numeric field: {line[:60]!r}") from None
    if not (-MAX_FIELD <= min(f) and max(f) <= MAX_FIELD and math.isfinite(sum(f))):  # NaN: sum is NaN
        raise ValueError(f"SWF line has a field that is NaN, infinite or beyond {MAX_FIELD:g}: {line[:60]!r}")
    return f


def parse_rows(text: str) -> list[SwfRow]:
    """Every job line (18 fields; comments start with ';'); a malformed line is a ValueError, as are no job
    lines at all and more than MAX_SWF_LINES lines."""
    if text.count("\n") >= MAX_SWF_LINES:
        raise ValueError(f"SWF file has more than {MAX_SWF_LINES:,} lines: replay a part of it (head -n)")
    rows = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith(";"):
            continue
        f = _fields(line)
        procs = int(f[7] if f[7] > 0 else f[4])
        rows.append(SwfRow(int(f[0]), f[1], f[3], procs, f[8], f[9], int(f[10]), int(f[11]), int(f[12]), int(f[13])))
    if not rows:
        raise ValueError("SWF file has no job lines (one job a line, 18 numbers; ';' starts a comment)")
    return rows


def clean_swf(rows: list[SwfRow], machine: Machine, cleaning: Cleaning) -> tuple[list[SwfRow], SwfReport]:
    """The rows to replay (requested time fixed per `cleaning`) and the report."""
    rep = SwfReport(machine, cleaning, lines=len(rows))
    out = []
    for r in rows:
        if r.runtime < 0 or r.procs <= 0:
            rep.unknown += 1
            continue
        if r.runtime == 0 and cleaning.drop_zero_runtime:
            rep.zero_runtime += 1
            continue
        if r.procs > machine.procs:
            rep.too_wide += 1
            continue
        req = r.requested
        if req <= 0:
            rep.no_request += 1
            req = r.runtime
        elif req < r.runtime:
            rep.underrequested += 1
            if cleaning.underrequested is Underrequested.DROP:
                continue
            if cleaning.underrequested is Underrequested.EXTEND:
                req = r.runtime
        out.append(
            SwfRow(r.number, r.submit, r.runtime, r.procs, req, r.memory_kb, r.status, r.user, r.group, r.executable)
        )
    rep.kept = len(out)
    return out, rep
