"""A gateway that users reach over TCP with their own bearer tokens (shared by the memory tests).

Jobs run as their submitter's Unix user, so each user is made when missing (tests/unix_users.py).
"""

from __future__ import annotations

import socket
from typing import Any

from frontdesk.client import Client
from unix_users import ensure_user


def free_port() -> int:
    """A TCP port on 127.0.0.1 free right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def token_gateway(gateway_factory: Any, tokens: tuple[str, ...], users: tuple[str, ...] = (), extra: str = "") -> Any:
    """A gateway listening on a free local port, owner token `tok-owner`, one token `tok-<user>` for each of
    `tokens`, [memory] unix_groups off, then `extra` config. The users of `tokens` and `users` are made when
    missing. Sets gw.url and gw.as_user[user]: a Client with that user's token."""
    for user in dict.fromkeys((*tokens, *users)):
        ensure_user(user)
    port = free_port()
    lines = "".join(f'tok-{u} = "{u}"\n' for u in tokens)
    config = f'[gateway]\nlisten = "127.0.0.1:{port}"\ntoken = "tok-owner"\n[gateway.tokens]\n{lines}'
    gw = gateway_factory(config=config + "[memory]\nunix_groups = false\n" + extra)
    gw.url = f"http://127.0.0.1:{port}"
    gw.as_user = {u: Client(url=gw.url, token=f"tok-{u}", timeout=60) for u in tokens}
    return gw
