"""Entry point: `frontdesk COMMAND ...`. Each command group lives in its own module with `register()`.

argparse rather than Typer on purpose: this runs as a fresh process on the agent's hot path, and every
command module keeps heavy imports (pydantic, fastapi, httpx) inside the functions that need them.
Exit codes: 0 ok, 1 internal error, 2 bad input, 3 not found, 4 conflict, 69 gateway down,
70 backend error, 77 not permitted (another user's object, a bad token), 124 timeout, 130 interrupted
(see frontdesk.errors).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing itself costs a fresh process ~1.5 ms
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

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


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser with every command module registered (or only the module named `only`)."""
    import importlib

    from frontdesk import __version__
    from frontdesk.cli.parsing import Parser as _Parser

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
    """Run one command; print one line and exit non-zero on error, never a traceback.

    A process's own command line (argv None) of a hot command tries frontdesk.cli.fast first (no argparse).
    """
    if argv is None and sys.argv[1:2] and sys.argv[1] in ("status", "report", "logs", "wait", "cancel"):
        from frontdesk.cli.fast import run

        code = run(sys.argv[1:])
        if code is not None:
            return code
    if argv is None and sys.argv[1:2] == ["hook"] and not {"-h", "--help"} & set(sys.argv[2:]):
        from frontdesk.agents.hooks import main as hook  # a harness hook: every turn, no CLI parser (fails open)

        return hook(sys.argv[2:])
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv == ["--version"]:  # without building any parser
        from frontdesk import __version__

        sys.stdout.write(f"frontdesk {__version__}\n")
        return 0
    from frontdesk.cli.output import emit_error
    from frontdesk.cli.parsing import Parser as _Parser
    from frontdesk.errors import FrontdeskError

    first = next((a for a in argv if not a.startswith("-")), None)
    _Parser.json_errors = "--json" in argv[: argv.index("--") if "--" in argv else len(argv)]
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
