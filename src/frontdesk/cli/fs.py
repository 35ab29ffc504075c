"""`frontdesk fs grep|find|head|tail|wc|tree|du ...`: storage operators that return only results.

Asks the gateway (POST /v1/fs/OP), which runs the operator as the caller next to the data and counts it
against the caller's metadata budget; runs it here when no gateway answers (or with --local). The operator's
own flags are those of grep/rg, find, head, tail, wc and du (docs/storage.md); this command adds --json,
--limit N (items per page), --cursor TOKEN (the next page) and --local. Exit codes: 0 ok, 1 grep found
nothing, 2 bad input, 75 metadata budget empty (retry after the seconds printed).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

__all__ = ["register"]

_OPS = ("grep", "find", "head", "tail", "wc", "tree", "du")


def register(sub: Any) -> None:
    """Add the `fs` command."""
    p = sub.add_parser(
        "fs",
        help="storage operators next to the data: grep find head tail wc tree du",
        description="frontdesk fs OP [operator flags] [--json] [--limit N] [--cursor TOKEN] [--local]",
        add_help=True,
    )
    p.add_argument("op", choices=(*_OPS, "hint"), help="an operator; `hint` is the PostToolUse hook (storage/hint.py)")
    p.add_argument("rest", nargs=argparse.REMAINDER, help="the operator's own flags and paths")
    p.set_defaults(func=cmd_fs)


def _own_flags(rest: list[str]) -> tuple[list[str], dict[str, Any]]:
    """Split this command's flags (--json, --limit, --cursor, --local) from the operator's."""
    from frontdesk.errors import UserError

    own: dict[str, Any] = {"json": False, "local": False, "limit": None, "cursor": None}
    out: list[str] = []
    it = iter(rest)
    for arg in it:
        name, eq, value = arg.partition("=")
        if arg in ("--json", "--local"):
            own[arg[2:]] = True
        elif name in ("--limit", "--cursor"):
            value = value if eq else next(it, "")
            if not value:
                raise UserError(f"fs: {name} needs a value")
            own[name[2:]] = value
        else:
            out.append(arg)
    if own["limit"] is not None:
        if not str(own["limit"]).isdigit():
            raise UserError(f"fs: --limit must be a positive number, got {own['limit']!r}")
        own["limit"] = int(own["limit"])
    return out, own


def _ask_gateway(op: str, body: dict[str, Any]) -> dict[str, Any] | None:
    """The gateway's answer, or None when no gateway (or none with the storage plug-in) answers."""
    from frontdesk.client import Client
    from frontdesk.errors import GatewayUnavailable, NotFound

    try:
        answer: dict[str, Any] = Client(autostart=False).request("POST", f"/v1/fs/{op}", body)
    except (GatewayUnavailable, NotFound) as exc:
        if isinstance(exc, NotFound) and exc.fields.get("where") == "fs":
            raise
        return None
    return answer


def _run_here(op: str, argv: list[str], cwd: str, limit: int | None, cursor: str | None) -> dict[str, Any]:
    from frontdesk.storage.fs import Fs
    from frontdesk.storage.model import Op
    from frontdesk.storage.ops import DEFAULT_LIMIT, FsRequest, run

    answer = run(FsRequest(Op(op), tuple(argv), cwd, limit or DEFAULT_LIMIT, cursor), Fs()).to_json()
    answer["where"] = "local"
    return answer


def answer(
    op: str, argv: list[str], cwd: str, *, limit: int | None = None, cursor: str | None = None,
    session: str | None = None, local: bool = False,
) -> dict[str, Any]:  # fmt: skip
    """One operator's answer (a page): from the gateway, as the caller and within their budget; here when no
    gateway with the storage plug-in answers (or `local`). The CLI and the MCP tool both call this."""
    if op not in _OPS:
        from frontdesk.errors import UserError

        raise UserError(f"fs: unknown operator {op!r} (one of {', '.join(_OPS)})")
    got = None
    if not local:
        body = {"argv": argv, "cwd": cwd, "limit": limit, "cursor": cursor, "session": session}
        got = _ask_gateway(op, {k: v for k, v in body.items() if v is not None})
    return got if got is not None else _run_here(op, argv, cwd, limit, cursor)


def cmd_fs(args: argparse.Namespace) -> int:
    if args.op == "hint":  # the guard's PostToolUse note: reads the hook's input, never fails the tool
        from frontdesk.storage.hint import main as hint

        return hint()
    from frontdesk.agents.detect import detect_context
    from frontdesk.cli.output import dumps

    argv, own = _own_flags(list(args.rest))
    if "--help" in argv[: argv.index("--") if "--" in argv else len(argv)]:  # -h is du's and grep's own flag
        from frontdesk.storage.model import Op
        from frontdesk.storage.ops import parser_for

        sys.stdout.write(parser_for(Op(args.op)).format_help())
        sys.stdout.write("\nfrontdesk fs adds: --json, --limit N, --cursor TOKEN, --local (docs/storage.md)\n")
        return 0
    args.json = own["json"]  # main() prints errors as JSON too
    session = None if own["local"] else detect_context().get("session")  # the budget's key: (user, session)
    got = answer(
        args.op, argv, os.getcwd(), limit=own["limit"], cursor=own["cursor"], session=session, local=own["local"]
    )
    out = sys.stdout.buffer
    if own["json"]:
        out.write(dumps(got).encode() + b"\n")
    else:
        out.write(str(got.get("text", "")).encode("utf-8", "surrogateescape"))
    out.flush()
    for err in got.get("errors") or []:
        sys.stderr.write(f"frontdesk fs {args.op}: {err.get('path')}: {err.get('message')}\n")
    if got.get("cursor"):
        sys.stderr.write(f"frontdesk fs: output capped; next page: --cursor {got['cursor']}\n")
    from frontdesk.shims.fswrap import exit_code

    quiet = args.op == "grep" and any(a in ("-s", "--no-messages", "-q", "--quiet") for a in argv)
    return exit_code(args.op, bool(got.get("items")), bool(got.get("errors")), quiet)  # as the real tool
