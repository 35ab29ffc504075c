"""`frontdesk token create|list|revoke --principal P`: bearer tokens for automation over TCP (admins only).

The gateway keeps only each token's SHA-256 digest and shows a new token once. A token never travels on a
command line (`ps` shows argv to every user): `create` makes one, or reads one from `--from-file F` or
`--stdin`; the client reaches the gateway over its Unix socket, where the kernel says who the admin is.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any
from urllib.parse import urlencode

from frontdesk.cli.output import emit
from frontdesk.cli.parsing import client, group

__all__ = ["register"]


def register(sub: Any) -> None:
    """Add the `token` command group."""
    p, tsub = group(sub, "token", "bearer tokens for TCP clients: create, list, revoke (admins)", "token_command")

    c = tsub.add_parser("create", help="a new token for a Unix user, shown once")
    c.add_argument("--principal", required=True, help="the Unix user the token acts as")
    given = c.add_mutually_exclusive_group()
    given.add_argument("--from-file", metavar="FILE", help="register the token held in FILE instead of a new one")
    given.add_argument("--stdin", action="store_true", help="register the token read from stdin")
    c.add_argument("--token", help=argparse.SUPPRESS)  # refused without echoing it: argv is public (ps)
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=cmd_create)

    ls = tsub.add_parser("list", help="tokens in the gateway's tokens file (ids, never the tokens)")
    ls.add_argument("--principal", help="only this user's")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=cmd_list)

    r = tsub.add_parser("revoke", help="revoke a user's tokens (all, or the one with --id); holds at once")
    r.add_argument("--principal", required=True)
    r.add_argument("--id", help="the token's id (from `frontdesk token list`)")
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=cmd_revoke)


def _given_token(args: argparse.Namespace) -> str | None:
    """The token to register, from a file or stdin (None: the gateway makes one)."""
    from frontdesk.errors import UserError

    if args.token is not None:
        raise UserError("a token on the command line is public (ps shows it): give it with --stdin or --from-file")
    if args.from_file:
        try:
            with open(args.from_file, encoding="utf-8") as fh:
                text = fh.read()
        except OSError as exc:
            raise UserError(f"cannot read {args.from_file}: {exc.strerror}") from None
    elif args.stdin:
        text = sys.stdin.read()
    else:
        return None
    token = text.strip()
    if not token or len(token.split()) != 1:
        raise UserError("expected one token (one word) in the input")
    return token


def cmd_create(args: argparse.Namespace) -> int:
    """Make (or register) a token; a made one is printed once."""
    token = _given_token(args)
    body = {"principal": args.principal, **({"token": token} if token is not None else {})}
    res = client().request("POST", "/v1/tokens", body)

    def text() -> str:
        head = f"token {res['id']} for {res['principal']}"
        if "token" not in res:
            return f"{head}: registered"
        return f"{head} (shown once; keep it in a 0600 file and point FRONTDESK_TOKEN_FILE at it):\n{res['token']}"

    emit(args.json, res, text)
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    """List tokens by id."""
    query = f"?{urlencode({'principal': args.principal})}" if args.principal else ""
    res = client().request("GET", f"/v1/tokens{query}")

    def text() -> str:
        rows = [
            f"{t['id']}  {t['principal']}  created {t['created'] or '?'} by {t['by'] or '?'}" for t in res["tokens"]
        ]
        return "\n".join(rows) or f"no tokens in {res['file']}"

    emit(args.json, res, text)
    return 0


def cmd_revoke(args: argparse.Namespace) -> int:
    """Revoke tokens."""
    body = {"principal": args.principal, **({"id": args.id} if args.id else {})}
    res = client().request("POST", "/v1/tokens/revoke", body)
    emit(args.json, res, f"revoked {len(res['revoked'])} token(s) of {res['principal']}: {', '.join(res['revoked'])}")
    return 0
