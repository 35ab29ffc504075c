"""`frontdesk observe` (sample who runs what on this node) and `frontdesk analyze` (agents against people).

Thin: the work is in frontdesk.telemetry, imported inside the commands.
"""

from __future__ import annotations

import argparse
from dataclasses import asdict
from pathlib import Path
from typing import Any

from frontdesk.cli.output import emit

__all__ = ["register", "cmd_observe"]


def register(sub: Any) -> None:
    """Add the insight commands."""
    o = sub.add_parser("observe", help="sample new processes at up to 5 Hz; attribute them to agents or people")
    o.add_argument("--hz", type=float, default=5.0, help="samples per second (at most 5; default 5)")
    o.add_argument("--duration", type=float, default=None, help="seconds to run (default: until stopped)")
    o.add_argument("--out", type=Path, default=Path("observe.db"), help="SQLite file to write (default observe.db)")
    o.add_argument("--json", action="store_true", help="print the run's summary as JSON")
    o.set_defaults(func=cmd_observe)


def cmd_observe(args: argparse.Namespace) -> int:
    """Run the sampler and print what it recorded."""
    from frontdesk.telemetry.observe import observe

    result = observe(args.out, args.hz, args.duration)
    emit(
        args.json,
        asdict(result),
        f"{result.recorded} processes attributed, {result.excluded} excluded, in {result.ticks} samples over "
        f"{result.seconds:g} s ({result.cpu_percent:g} % of one core) -> {result.db}",
    )
    return 0
