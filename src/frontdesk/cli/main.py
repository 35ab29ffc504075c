"""Entry point: `frontdesk COMMAND ...`. Each command group lives in its own module with `register()`.

argparse rather than Typer on purpose: this runs as a fresh process on the agent's hot path, and every
command module keeps heavy imports (pydantic, fastapi, httpx) inside the functions that need them.
Exit codes: 0 ok, 1 internal error, 2 bad input, 3 not found, 4 conflict, 69 gateway down,
70 backend error, 77 not permitted (another user's object, a bad token), 124 timeout, 130 interrupted
(see frontdesk.errors).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["main", "build_parser", "COMMAND_MODULES"]

COMMAND_MODULES: tuple[str, ...] = (
    "frontdesk.cli.jobs",
    "frontdesk.cli.server",
    "frontdesk.cli.slurm",
    "frontdesk.cli.agents",
    "frontdesk.cli.policy",
    "frontdesk.cli.memory",
    "frontdesk.cli.guard",
    "frontdesk.cli.service",
    "frontdesk.cli.insight",
    "frontdesk.cli.fs",
    "frontdesk.cli.token",
)


# Which module registers each top-level command, so that one call builds only its own group's parser
# (argparse construction of every group costs more than the rest of a thin command). Kept complete by
# tests/unit/core/test_cli_map.py.
COMMAND_TO_MODULE: dict[str, str] = {
    **dict.fromkeys(
        ("submit", "run", "wait", "status", "jobs", "queue", "cancel", "retry", "logs", "report", "events"),
        "frontdesk.cli.jobs",
    ),
    "serve": "frontdesk.cli.server",
    "demo": "frontdesk.cli.server",
    **dict.fromkeys(("notify", "shim"), "frontdesk.cli.slurm"),
    **dict.fromkeys(("sessions", "hooks", "hook", "mcp", "doctor"), "frontdesk.cli.agents"),
    **dict.fromkeys(("cluster", "policy", "simulate"), "frontdesk.cli.policy"),
    "memory": "frontdesk.cli.memory",
    "guard": "frontdesk.cli.guard",
    "service": "frontdesk.cli.service",
    **dict.fromkeys(("observe", "analyze"), "frontdesk.cli.insight"),
    "fs": "frontdesk.cli.fs",
    "token": "frontdesk.cli.token",
}


def _columns() -> int:
    """shutil.get_terminal_size().columns, without importing shutil."""
    try:
        return int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        pass
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns if sys.__stdout__ else 80
    except (AttributeError, ValueError, OSError):
        return 80


class _Formatter(argparse.HelpFormatter):
    """argparse's help formatter, less its `import shutil` (with bz2, lzma, zlib: 2 ms): argparse builds one
    for every add_argument, so each command paid it although help is rarely printed."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None):
        super().__init__(prog, indent_increment, max_help_position, _columns() - 2 if width is None else width)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"frontdesk: {message}\n")
        raise SystemExit(2)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser with every command module registered (or only the module named `only`)."""
    from frontdesk import __version__

    parser = _Parser(prog="frontdesk", description="The facility's front desk for coding agents.")
    parser.add_argument("--version", action="version", version=f"frontdesk {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in (only,) if only else COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue  # a command group not built yet
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; print one line and exit non-zero on error, never a traceback."""
    from frontdesk.cli.output import emit_error
    from frontdesk.errors import FrontdeskError

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv == ["--version"]:  # without building any parser
        from frontdesk import __version__

        sys.stdout.write(f"frontdesk {__version__}\n")
        return 0
    first = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(COMMAND_TO_MODULE.get(first or ""))
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return 2
    as_json = bool(getattr(args, "json", False))
    try:
        return int(func(args) or 0)
    except FrontdeskError as exc:
        emit_error(as_json, exc.to_payload())
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("frontdesk: interrupted\n")
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
