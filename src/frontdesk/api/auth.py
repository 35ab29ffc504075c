"""Who sent this request: SO_PEERCRED on the Unix socket, a MUNGE credential or a bearer token on TCP.

`api.connection.peer_protocol()` is the uvicorn HTTP protocol that reads the peer's credentials once per
connection and puts them in every request's ASGI scope (`scope["frontdesk.peer"]`); `Authenticator.caller` turns a
request into an `identity.Caller` or raises `Unauthenticated`. Identity never comes from a name the
client sends. Tokens are never logged; a Unix-socket caller is the kernel's answer even if it sends one.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from frontdesk.config import Settings
from frontdesk.errors import ConfigError, FrontdeskError, Unauthenticated
from frontdesk.identity import Caller, PeerCred, Roles, TokenTable, Via, unmunge_credential, user_name

__all__ = ["PEER_KEY", "Authenticator", "Unauthenticated", "tokens_file_of", "tokens_from_settings"]

PEER_KEY = "frontdesk.peer"


def tokens_from_settings(settings: Settings) -> TokenTable:
    """The gateway's token table: `[gateway] token` (the service's own user), `[gateway.tokens]`, `tokens_file`."""
    gw = settings.section("gateway")
    entries: dict[str, str] = {}
    if settings.token:
        entries[settings.token] = user_name(os.geteuid())
    extra = gw.get("tokens", {})
    if not isinstance(extra, dict):
        raise ConfigError("[gateway.tokens]: expected a table of token (or sha256:HEX) = user")
    entries.update({str(k): str(v) for k, v in extra.items()})
    file, configured = tokens_file_of(settings)
    return TokenTable(entries, file, required=configured)


def tokens_file_of(settings: Settings) -> tuple[Path, bool]:
    """The hashed-tokens file (`frontdesk token` edits it) and whether the site named it (else the state
    dir's `tokens`, which may not exist yet): `[gateway] tokens_file`, FRONTDESK_TOKENS_FILE, `<home>/tokens`."""
    file = settings.section("gateway").get("tokens_file") or os.environ.get("FRONTDESK_TOKENS_FILE")
    return (Path(str(file)), True) if file else (settings.home / "tokens", False)


class Authenticator:
    """Resolves requests to Callers for one gateway."""

    def __init__(self, settings: Settings, roles: Roles, tokens: TokenTable) -> None:
        self.settings = settings
        self.roles = roles
        self.tokens = tokens
        self.facility = settings.mode == "facility"
        self.munge = settings.section("gateway").get("munge") is True
        self._owner = user_name(os.geteuid())

    def wants_body(self, scope: Mapping[str, Any], headers: Mapping[str, str]) -> bool:
        """Whether this request's credential is checked against its body (MUNGE over TCP: `caller`'s `body`)."""
        scheme = headers.get("authorization", "").partition(" ")[0]
        return bool(scope.get("client")) and self.munge and scheme.lower() == "munge"

    async def caller(self, scope: Mapping[str, Any], headers: Mapping[str, str], body: bytes = b"") -> Caller:
        """The Caller of one request, or Unauthenticated. A MUNGE credential must carry this very request
        (`wire.request_binding` of its method, target and `body`): one seen on its way is good for nothing else."""
        if not scope.get("client"):  # a Unix socket: uvicorn has no client address there
            cred: PeerCred | None = scope.get(PEER_KEY)
            if cred is not None:
                return self.roles.caller_for_uid(cred.uid, cred.gid, Via.UNIX)
            if self.facility:
                raise Unauthenticated("no peer credentials on this connection")
            return self.roles.caller_for_name(self._owner, Via.UNIX)  # in-process (tests): the owner's socket
        auth = headers.get("authorization", "")
        scheme, _, value = auth.partition(" ")
        if scheme.lower() == "munge" and self.munge:
            try:
                cred = await asyncio.to_thread(unmunge_credential, value.strip(), _binding(scope, body))
            except FrontdeskError:
                raise Unauthenticated(
                    "the MUNGE credential was refused (bad, expired, replayed or for another request)"
                ) from None
            return self.roles.caller_for_uid(cred.uid, cred.gid, Via.MUNGE)
        if scheme.lower() == "bearer":
            user = self.tokens.user_for(value.strip())
            if user is not None:
                return self.roles.caller_for_name(user, Via.TOKEN)
        raise Unauthenticated("a valid bearer token or MUNGE credential is required")


def _binding(scope: Mapping[str, Any], body: bytes) -> str:
    """The request as its client named it in its MUNGE credential: method, target as sent, the body's digest."""
    from frontdesk.wire import request_binding

    path = scope.get("raw_path") or scope.get("path", "").encode()
    query = scope.get("query_string") or b""
    target = path.decode("latin-1") + ("?" + query.decode("latin-1") if query else "")
    return request_binding(str(scope.get("method", "")), target, body)
