"""`frontdesk observe` (sample who runs what on this node) and `frontdesk analyze` (agents against people).

Thin: the work is in frontdesk.telemetry, imported inside the commands.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from frontdesk.cli.output import emit

__all__ = ["register", "cmd_observe", "cmd_analyze"]


def register(sub: Any) -> None:
    """Add the insight commands."""
    o = sub.add_parser("observe", help="sample new processes at up to 5 Hz; attribute them to agents or people")
    o.add_argument("--hz", type=float, default=5.0, help="samples per second (at most 5; default 5)")
    o.add_argument("--duration", type=float, default=None, help="seconds to run (default: until stopped)")
    o.add_argument("--out", type=Path, default=Path("observe.db"), help="SQLite file to write (default observe.db)")
    o.add_argument("--json", action="store_true", help="print the run's summary as JSON")
    o.set_defaults(func=cmd_observe)
    a = sub.add_parser("analyze", help="the paper's metrics for agents against people, from an observe file")
    a.add_argument("db", type=Path, help="the SQLite file `frontdesk observe` wrote")
    a.add_argument("--journal", type=Path, default=None, help="the gateway's frontdesk.db (default: this home's)")
    a.add_argument("--no-journal", action="store_true", help="commands only: join no job records")
    a.add_argument("--json", action="store_true", help="print the metrics as JSON")
    a.add_argument("--html", type=Path, default=None, help="also write an HTML report with figures to this file")
    a.add_argument(
        "--sacct", default=None, metavar="FILE|-|run",
        help="also Slurm's accounting: a saved `sacct -a -X -P -n -o ...` (docs/insight.md), - for stdin, or run it",
    )  # fmt: skip
    a.add_argument("--test-partitions", default="test,debug,devel", help="partitions counted as test (comma-separated)")
    a.set_defaults(func=cmd_analyze)


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


def cmd_analyze(args: argparse.Namespace) -> int:
    """Print the metrics table (or JSON)."""
    from frontdesk.telemetry.analyze import analyze, render

    journal = args.journal
    if journal is None and not args.no_journal:
        from frontdesk.config import load_settings

        default = load_settings().db_path
        journal = default if default.is_file() else None
    extra: tuple[Any, ...] = ()
    if args.sacct is not None:
        from frontdesk.telemetry import sacct

        if args.sacct == "run":
            from frontdesk.telemetry.analyze import window

            got = sacct.run_sacct(*window(args.db))
        else:
            got = sacct.read(args.sacct)
        extra = got.jobs
        if got.skipped:
            print(f"frontdesk analyze: {got.skipped} sacct lines were not job records; skipped", file=sys.stderr)
    tests = frozenset(p.strip() for p in str(args.test_partitions).split(",") if p.strip())
    metrics = analyze(args.db, None if args.no_journal else journal, extra, tests)
    if args.html is not None:
        from frontdesk.telemetry.html_report import render_html

        try:
            args.html.write_text(render_html(metrics))
        except OSError as exc:
            from frontdesk.errors import UserError

            raise UserError(f"cannot write {args.html}: {exc.strerror}") from exc
    emit(args.json, metrics.to_json(), lambda: render(metrics))
    return 0
