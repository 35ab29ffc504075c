"""`/v1/tokens`: bearer tokens for automation, made, listed and revoked by admins (`frontdesk token`).

Tokens are kept only as SHA-256 digests in the gateway's tokens file (`USER sha256:HEX  # created=... by=...`,
mode 0600, replaced atomically); a new token is shown once, in the answer to the admin who made it. A token's
id is the first 12 hex digits of its digest (not a secret: the digest of 256 random bits). The table re-reads
the file on every TCP request, so a revocation holds from the next one. Tokens named in frontdesk.toml
(`[gateway.tokens]`) are the config's, not this file's: they are neither listed nor revoked here.
"""

from __future__ import annotations

import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from frontdesk.api.auth import tokens_file_of
from frontdesk.errors import NotFound, UserError
from frontdesk.identity import check_private_file, hash_token

__all__ = ["TokenLine", "router", "read_lines", "write_lines"]

router = APIRouter(prefix="/v1")
_ID_LEN = 12


@dataclass(frozen=True)
class TokenLine:
    """One entry of the tokens file."""

    principal: str
    digest: str
    note: str = ""

    @property
    def id(self) -> str:
        """The public handle of a token: the first hex digits of its digest."""
        return self.digest.removeprefix("sha256:")[:_ID_LEN]

    def render(self) -> str:
        return f"{self.principal} {self.digest}" + (f"  # {self.note}" if self.note else "")

    def to_dict(self) -> dict[str, Any]:
        fields = dict(part.partition("=")[::2] for part in self.note.split() if "=" in part)
        return {"principal": self.principal, "id": self.id, "created": fields.get("created"), "by": fields.get("by")}


def read_lines(path: Path) -> list[TokenLine | str]:
    """The file's entries in order (comments and blank lines kept as text); [] when it does not exist."""
    if not path.exists():
        return []
    check_private_file(path, "tokens file")
    out: list[TokenLine | str] = []
    for line in path.read_text().splitlines():
        text, _, note = line.partition("#")
        parts = text.split()
        if len(parts) == 2:
            user, key = (parts[0], parts[1]) if parts[1].startswith("sha256:") else (parts[1], parts[0])
            out.append(TokenLine(user, key if key.startswith("sha256:") else hash_token(key), note.strip()))
        else:
            out.append(line)
    return out


def write_lines(path: Path, lines: list[TokenLine | str]) -> None:
    """Replace the file atomically, mode 0600 (a reader never sees half of it)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write("".join((ln.render() if isinstance(ln, TokenLine) else ln) + "\n" for ln in lines))
    os.replace(tmp, path)


class CreateBody(BaseModel):
    """POST /v1/tokens: a token for one Unix user; the gateway makes one when none is given."""

    model_config = ConfigDict(extra="forbid")
    principal: str = Field(min_length=1, max_length=64)
    token: str | None = Field(default=None, min_length=24, max_length=512)


class RevokeBody(BaseModel):
    """POST /v1/tokens/revoke: every token of a principal, or the one with this id."""

    model_config = ConfigDict(extra="forbid")
    principal: str = Field(min_length=1, max_length=64)
    id: str | None = Field(default=None, min_length=4, max_length=_ID_LEN)


def _file(request: Request, verb: str, principal: str | None) -> Path:
    """The tokens file, once the caller is an admin (refusals journalled)."""
    request.app.state.access.admin(request.state.caller, verb, principal or "every user")
    path, _ = tokens_file_of(request.app.state.gw.settings)
    return path


def _unix_user(request: Request, name: str) -> str:
    """The token's user; Forbidden (journalled) for root unless root asks: a job sent with a token of root's
    runs as uid 0, so an admin of the site's group would be root on the machine."""
    import pwd

    try:
        pw = pwd.getpwnam(name)
    except KeyError:
        raise UserError(f"no Unix user {name!r}: a token maps to one user of this machine") from None
    caller = request.state.caller
    if pw.pw_uid == 0 and caller.uid != 0:
        raise request.app.state.access.deny(caller, "make a token for", pw.pw_name, pw.pw_name)
    return pw.pw_name


@router.get("/tokens")
async def list_tokens(request: Request, principal: str | None = Query(default=None, max_length=64)) -> dict[str, Any]:
    path = _file(request, "list the tokens of", principal)
    found = [ln.to_dict() for ln in read_lines(path) if isinstance(ln, TokenLine)]
    return {"file": str(path), "tokens": [t for t in found if principal in (None, t["principal"])]}


@router.post("/tokens")
async def create(body: CreateBody, request: Request) -> dict[str, Any]:
    path = _file(request, "make a token for", body.principal)
    user = _unix_user(request, body.principal)
    token = body.token.strip() if body.token else secrets.token_urlsafe(32)
    if not token or any(c.isspace() for c in token):
        raise UserError("a token is one word without spaces")
    lines = read_lines(path)
    entry = TokenLine(user, hash_token(token), f"created={time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} "
                      f"by={request.state.caller.user}")  # fmt: skip
    if any(isinstance(ln, TokenLine) and ln.digest == entry.digest for ln in lines):
        raise UserError("this token is already in use: make a new one")
    write_lines(path, [*lines, entry])
    answer: dict[str, Any] = {"principal": user, "id": entry.id, "file": str(path)}
    if body.token is None:
        answer["token"] = token  # shown once; only its digest is kept
    return answer


@router.post("/tokens/revoke")
async def revoke(body: RevokeBody, request: Request) -> dict[str, Any]:
    path = _file(request, "revoke the tokens of", body.principal)
    lines = read_lines(path)

    def hit(ln: TokenLine | str) -> bool:
        return isinstance(ln, TokenLine) and ln.principal == body.principal and body.id in (None, ln.id)

    gone = [ln.id for ln in lines if isinstance(ln, TokenLine) and hit(ln)]
    if not gone:
        which = f"token {body.id} of {body.principal}" if body.id else f"token of {body.principal}"
        raise NotFound(f"no {which} in {path}")
    write_lines(path, [ln for ln in lines if not hit(ln)])
    return {"principal": body.principal, "revoked": gone}
