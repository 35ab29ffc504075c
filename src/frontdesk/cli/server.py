"""`frontdesk serve` (the gateway, foreground) and `frontdesk demo` (a gateway plus a small campaign)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

__all__ = ["register"]


def register(sub: Any) -> None:
    """Add `serve` and `demo`."""
    p = sub.add_parser("serve", help="run the gateway in the foreground")
    p.add_argument("--config", help="frontdesk.toml to load (default: $FRONTDESK_CONFIG, then the home's)")
    p.add_argument("--backend", choices=["local", "slurm"], help="where jobs run (default: local)")
    p.add_argument("--listen", metavar="HOST:PORT", help="also serve TCP (needs a token from the env/a file, or MUNGE)")
    p.add_argument("--token", help=argparse.SUPPRESS)  # refused: a token on the command line is public (ps)
    p.add_argument("--facility", action="store_true", help="one gateway for all users (run as root or a service user)")
    p.add_argument("--socket", help="Unix socket path (default: $XDG_RUNTIME_DIR/frontdesk/gateway.sock)")
    p.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    p.add_argument("--json", action="store_true", help="print the listening addresses as JSON on start")
    p.set_defaults(func=cmd_serve)

    d = sub.add_parser("demo", help="start a gateway on the embedded backend and run a small campaign")
    d.add_argument("--keep", action="store_true", help="leave the demo's state directory in place")
    d.add_argument("--json", action="store_true", help="print each report as JSON")
    d.set_defaults(func=cmd_demo)


def cmd_serve(args: argparse.Namespace) -> int:
    """Run the gateway until SIGTERM/SIGINT."""
    from frontdesk.server import serve

    if args.socket:
        os.environ["FRONTDESK_SOCKET"] = args.socket
    return serve(
        config=args.config,
        backend=args.backend,
        listen=args.listen,
        token=args.token,
        log_level=args.log_level,
        announce_json=args.json,
        facility=args.facility,
    )


def cmd_demo(args: argparse.Namespace) -> int:
    """The README's first command: a campaign on the embedded backend, reports printed as they arrive."""
    from frontdesk.demo import run_demo

    return run_demo(keep=args.keep, as_json=args.json, out=sys.stdout)
