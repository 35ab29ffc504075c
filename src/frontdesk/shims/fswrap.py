"""Drop-in `grep`/`rg`/`find`/`du` wrappers: recursive work goes to the storage operators, the rest runs the tool.

`frontdesk shim install DIR --fs` writes one small `sh` script per tool into DIR. The script decides cheaply
(no Python) whether the call is recursive work (`grep -r`, `rg -uu`, `find`, `du`) and otherwise `exec`s the
real tool, whose path was found at install time. Recursive work runs `python -m frontdesk.shims.fswrap OP
REAL ARGS...`, which asks the gateway (`POST /v1/fs/OP`, counted against the caller's metadata budget and
answered from its cache) and prints the answer as the tool would, page after page. Whatever the operators
cannot answer exactly (a flag they do not know: `find -delete`, `-exec`, `grep -P`...), and every call when no
gateway with the storage plug-in answers, goes to the real tool unchanged. An empty budget is the one answer
that does not: one line on stderr with the seconds to wait, exit 75 (EX_TEMPFAIL), so the agent sees it.

Stdlib and `frontdesk.client` only: this runs on the agent's hot path.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["TOOLS", "exit_code", "main", "wrapper_text"]

TOOLS = ("grep", "rg", "find", "du")
"""The tools a wrapper can stand in for."""

_TEMPFAIL = 75
_MAX_PAGES = 1000
_PAGE = 100_000

# Each wrapper: `sh` decides; `$R` is the real tool, `fd` the Python side. A `--` ends the options.
_ROUTE = {
    # grep: recursive only (-r, -R or a short cluster holding r/R); `grep x file` never starts Python.
    "grep": """for a in "$@"; do
  case "$a" in
    --) break ;;
    -r|-R|--recursive|--dereference-recursive) fd "$@" ;;
    --*) ;;
    -*[rR]*) fd "$@" ;;
  esac
done
exec "$R" "$@\"""",
    # rg honours .gitignore and skips hidden files; the operators do not (rg -uu), so only -uu/-uuu go there.
    "rg": """for a in "$@"; do
  case "$a" in
    --) break ;;
    -uu|-uuu) fd "$@" ;;
  esac
done
exec "$R" "$@\"""",
    # find and du: always recursive; actions the operators do not have go straight to the real tool.
    "find": """for a in "$@"; do
  case "$a" in
    -delete|-exec|-execdir|-ok|-okdir|-fprint*|-fls|-printf|-print0|-prune|-quit) exec "$R" "$@" ;;
  esac
done
fd "$@\"""",
    "du": 'fd "$@"',
}


def wrapper_text(tool: str, real: str, python: str) -> str:
    """The `sh` wrapper for `tool`, running `real` for what it does not route to the operators."""
    side = f"{shlex.quote(python)} -m frontdesk.shims.fswrap {tool} {shlex.quote(real)}"
    return (
        "#!/bin/sh\n"
        f"# frontdesk fs wrapper for `{tool}` (docs/storage.md): recursive work goes to the storage operators,\n"
        f"# the rest to {real}. Written by `frontdesk shim install --fs`.\n"
        f'R={shlex.quote(real)}\nfd() {{ exec {side} "$@"; }}\n{_ROUTE[tool]}\n'
    )


def _operator_argv(tool: str, argv: list[str]) -> tuple[str, list[str]]:
    """The operator and its arguments for a call of `tool`: rg's -uu is the operators' own rule."""
    if tool == "rg":
        return "grep", [a for a in argv if a not in ("-uu", "-uuu")]
    return tool, argv


def exit_code(tool: str, items: bool, errors: bool, quiet: bool) -> int:
    """The real tool's exit code: grep/rg 2 on an error (unless quiet), 1 when nothing matched; others 1 on an error."""
    if tool in ("grep", "rg"):
        if errors and not quiet:
            return 2
        return 0 if items else 1
    return 1 if errors else 0


def _real(real: str, argv: Sequence[str]) -> int:
    os.execv(real, [Path(real).name, *argv])
    return 127  # not reached


def _ask(op: str, argv: list[str]) -> list[dict[str, object]] | None:
    """Every page of the gateway's answer, or None when the real tool must answer instead."""
    from frontdesk.client import Client
    from frontdesk.errors import FrontdeskError, RateLimited

    body: dict[str, object] = {"argv": argv, "cwd": os.getcwd(), "limit": _PAGE}
    session = os.environ.get("FRONTDESK_SESSION") or os.environ.get("CLAUDE_SESSION_ID")
    if session:
        body["session"] = session
    pages: list[dict[str, object]] = []
    client = Client(autostart=False)
    for _ in range(_MAX_PAGES):
        try:
            page = client.request("POST", f"/v1/fs/{op}", body)
        except RateLimited:
            raise
        except FrontdeskError:  # no gateway, no storage plug-in, a flag the operator lacks: the real tool
            return None
        if not isinstance(page, dict):
            return None
        pages.append(page)
        cursor = page.get("cursor")
        if not cursor:
            return pages
        body["cursor"] = cursor
    return None  # past a million answers: let the real tool stream it


def main(args: Sequence[str] | None = None) -> int:
    """`python -m frontdesk.shims.fswrap TOOL REAL ARGS...`."""
    from frontdesk.errors import RateLimited

    tool, real, *argv = list(sys.argv[1:] if args is None else args)
    if tool not in TOOLS:
        sys.stderr.write(f"frontdesk fswrap: unknown tool {tool!r}\n")
        return 2
    op, op_argv = _operator_argv(tool, argv)
    try:
        pages = _ask(op, op_argv)
    except RateLimited as exc:
        wait = exc.fields.get("retry_after", 1)
        sys.stderr.write(f"{tool}: frontdesk metadata budget empty for this session; retry after {wait} s\n")
        return _TEMPFAIL
    if pages is None:
        return _real(real, argv)
    out, items, errors = sys.stdout.buffer, False, False
    for page in pages:
        out.write(str(page.get("text", "")).encode("utf-8", "surrogateescape"))
        items = items or bool(page.get("items"))
        found = page.get("errors")
        for err in found if isinstance(found, list) else []:
            errors = True
            where, why = (err.get("path"), err.get("message")) if isinstance(err, dict) else ("?", err)
            sys.stderr.write(f"{tool}: {where}: {why}\n")
    out.flush()
    quiet = any(a in ("-s", "--no-messages", "-q", "--quiet") for a in argv)
    return exit_code(tool, items, errors, quiet)


if __name__ == "__main__":
    sys.exit(main())
