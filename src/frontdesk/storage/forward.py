"""Forwarding to storage agents: a question whose paths lie under a configured prefix runs on that node.

```toml
[storage]
agent_key_file = "/etc/frontdesk/storage.key"   # the same key as the agents' (0600, the gateway's user)

[[storage.forward]]
prefix = "/lustre"          # paths under it (lexically, after joining the cwd) go to the agent
agent = "mds1:7755"         # where `python -m frontdesk.storage.agent` listens
```

The link is TLS when `[storage] agent_tls_ca` names the CA that signed the agents' certificates (the agents run
with `--tls-cert`/`--tls-key`); the agent's certificate and name are checked, never downgraded. Without it, a
route to a non-loopback agent is refused unless `[storage] insecure_plaintext = true` (docs/storage.md).

The agent must see the tree at the same path as the gateway's callers (a parallel filesystem mounted at the
same place, or a bind mount of the export on an NFS server). A question with paths under two places is
refused; one with none under a prefix runs on the gateway. The gateway still admits and charges the budget.
"""

from __future__ import annotations

import asyncio
import os
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from frontdesk.config import TableKeys
from frontdesk.errors import BackendError, ConfigError, Unauthenticated, UserError
from frontdesk.storage.channel import load_key, open_answer, seal_request
from frontdesk.storage.model import Op
from frontdesk.storage.ops import paths_of
from frontdesk.tls import client_context, is_loopback

__all__ = ["FORWARD_KEYS", "Forwarder", "Route"]


@dataclass(frozen=True)
class Route:
    """Paths under `prefix` are answered by the agent at `host:port`."""

    prefix: str
    host: str
    port: int

    @property
    def agent(self) -> str:
        return f"{self.host}:{self.port}"

    def covers(self, path: str) -> bool:
        return path == self.prefix or path.startswith(self.prefix.rstrip("/") + "/")


def _route(entry: object) -> Route:
    if (
        not isinstance(entry, Mapping)
        or not isinstance(entry.get("prefix"), str)
        or not isinstance(entry.get("agent"), str)
    ):
        raise ConfigError(f"[[storage.forward]] needs prefix and agent (HOST:PORT) strings, got {entry!r}")
    prefix, agent = os.path.normpath(entry["prefix"]), entry["agent"]
    host, sep, port = agent.rpartition(":")
    if not prefix.startswith("/") or not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"[[storage.forward]] prefix must be absolute and agent HOST:PORT, got {prefix!r}, {agent!r}")
    return Route(prefix, host.strip("[]"), int(port))


def _tls(section: Mapping[str, object], routes: Sequence[Route]) -> ssl.SSLContext | None:
    """The client context for `[storage] agent_tls_ca`, or None where every agent is loopback or the site wrote
    `insecure_plaintext = true`; ConfigError otherwise (questions and answers name users' files)."""
    ca, plain = section.get("agent_tls_ca"), section.get("insecure_plaintext", False)
    if ca is not None and (not isinstance(ca, str) or not ca):
        raise ConfigError("[storage] agent_tls_ca must be the path of a PEM CA bundle")
    if not isinstance(plain, bool):
        raise ConfigError("[storage] insecure_plaintext must be true or false")
    if ca:
        return client_context(ca)
    remote = [r.agent for r in routes if not is_loopback(r.host)]
    if remote and not plain:
        raise ConfigError(
            f"[[storage.forward]] agent {remote[0]} is not loopback: set [storage] agent_tls_ca (the agents run "
            "with --tls-cert/--tls-key), or insecure_plaintext = true inside a tunnel"
        )
    return None


FORWARD_KEYS = TableKeys.of(
    "storage",
    "forward agent_key_file agent_tls_ca insecure_plaintext",
    nested={"forward": TableKeys.of("storage.forward", "prefix agent")},
)
"""The `[storage]` keys of the routes to storage agents (`[[storage.forward]]` entries: prefix, agent)."""


@dataclass(frozen=True)
class Forwarder:
    """The gateway's routes to storage agents, and the signed exchange with them."""

    routes: tuple[Route, ...]
    key: bytes
    timeout_s: float = 130.0
    tls: ssl.SSLContext | None = None

    @classmethod
    def from_section(cls, section: Mapping[str, object], timeout_s: float) -> Forwarder | None:
        entries = section.get("forward")
        if entries is None:
            return None
        if not isinstance(entries, list) or not entries:
            raise ConfigError("[storage] forward must be a list of tables ([[storage.forward]])")
        key_file = section.get("agent_key_file")
        if not isinstance(key_file, str):
            raise ConfigError("[storage] agent_key_file is needed with [[storage.forward]]")
        routes = tuple(sorted((_route(e) for e in entries), key=lambda r: -len(r.prefix)))
        return cls(routes, load_key(key_file), timeout_s + 10, _tls(section, routes))

    def route_of(self, op: str, argv: Sequence[str], cwd: str) -> Route | None:
        """The agent that answers this question, or None (the gateway answers it)."""
        try:
            paths = paths_of(Op(op), argv)
        except (UserError, ValueError):
            return None  # the local run reports the bad flags
        full = [os.path.normpath(os.path.join(cwd, p)) for p in paths]
        hits = {next((r for r in self.routes if r.covers(p)), None) for p in full}
        if len(hits) > 1:
            raise UserError(f"fs {op}: these paths lie on different storage ({', '.join(full)}); ask one at a time")
        return hits.pop()

    async def ask(self, route: Route, user: str, question: dict[str, object]) -> dict[str, object]:
        """The agent's answer (a Result as JSON, or an error payload); BackendError when it cannot be reached."""
        line, nonce = seal_request(self.key, {**question, "user": user})
        try:
            async with asyncio.timeout(self.timeout_s):
                reader, writer = await asyncio.open_connection(
                    route.host, route.port, limit=256 * 1024 * 1024, ssl=self.tls
                )
                try:
                    writer.write(line)
                    await writer.drain()
                    reply = await reader.readline()
                finally:
                    writer.close()
        except (OSError, TimeoutError) as exc:  # ssl.SSLError (a failed check) is an OSError
            raise BackendError(
                f"storage agent {route.agent} for {route.prefix}: {exc or 'no answer in time'}"
            ) from None
        if not reply:
            raise BackendError(f"storage agent {route.agent} closed the connection")
        try:
            return open_answer(self.key, nonce, reply)
        except Unauthenticated as exc:  # the gateway's and the agent's keys differ: a site problem, not the caller's
            raise BackendError(f"storage agent {route.agent}: {exc.message}") from None
