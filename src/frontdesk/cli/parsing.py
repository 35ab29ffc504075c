"""The CLI's argparse classes, imported only when a command line needs parsing (`--version` does not), and the
preamble every command group shares: `group` (a command with subcommands) and `client` (the gateway's client,
imported only by the commands that talk to it).

argparse itself imports gettext, which imports locale (~1 ms of a fresh process) for translations argparse
never has: this module imports argparse with `_gettext_stand_in()` (gettext's two functions) in gettext's place,
then lets the real gettext be imported as usual by anything later.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing itself costs a fresh process ~1.5 ms
if TYPE_CHECKING:
    from typing import Any

    from frontdesk.client import Client

__all__ = ["Formatter", "Parser", "client", "group"]


def _gettext_stand_in() -> object:
    import types

    module = types.ModuleType("gettext")
    module.gettext = lambda message: message  # type: ignore[attr-defined]
    module.ngettext = lambda singular, plural, n: singular if n == 1 else plural  # type: ignore[attr-defined]
    return module


if "gettext" not in sys.modules:
    sys.modules["gettext"] = _gettext_stand_in()  # type: ignore[assignment]
    try:
        import argparse
    finally:
        del sys.modules["gettext"]
else:
    import argparse


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


class Formatter(argparse.HelpFormatter):
    """argparse's help formatter, less its `import shutil` (with bz2, lzma, zlib: 2 ms): argparse builds one
    for every add_argument, so each command paid it although help is rarely printed."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None):
        super().__init__(prog, indent_increment, max_help_position, _columns() - 2 if width is None else width)


class Parser(argparse.ArgumentParser):
    json_errors = False
    """Set by cli.main when the command line asks --json: a usage error is then the JSON error object on
    stdout as well (as every other error of a --json command), not only the line on stderr."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", Formatter)
        super().__init__(*args, **kwargs)

    def _get_value(self, action: argparse.Action, arg_string: str) -> Any:
        # int() and float() take any script's digits and 1_000: `--cpus ٤` is not a number a user typed
        if action.type in (int, float) and (not arg_string.isascii() or "_" in arg_string):
            name = getattr(action.type, "__name__", "number")
            raise argparse.ArgumentError(action, f"invalid {name} value: {arg_string[:40]!r} (ASCII digits only)")
        return super()._get_value(action, arg_string)

    def error(self, message: str) -> None:  # type: ignore[override]
        if Parser.json_errors:
            import json

            sys.stdout.write(json.dumps({"error": "bad_input", "message": message}) + "\n")
        sys.stderr.write(f"frontdesk: {message}\n")
        raise SystemExit(2)


def group(sub: Any, name: str, help: str, dest: str) -> tuple[Any, Any]:
    """Add the command `name` with subcommands (its parser, and their subparsers); alone it prints its help."""
    parser = sub.add_parser(name, help=help)
    subparsers = parser.add_subparsers(dest=dest, metavar="SUBCOMMAND", parser_class=type(parser))
    parser.set_defaults(func=lambda args: (parser.print_help(sys.stderr), 2)[1])
    return parser, subparsers


def client(timeout: float = 30.0) -> Client:
    """The gateway's client (frontdesk.client is imported here, by the commands that need it, not at start)."""
    from frontdesk.client import Client

    return Client(timeout=timeout)
