"""The storage agent: the fs operators served on the node where the data lives, to gateways holding the key.

    python -P -m frontdesk.storage.agent --listen 0.0.0.0:7755 --key-file /etc/frontdesk/storage.key

A gateway forwards a question whose paths lie under a configured prefix (`[[storage.forward]]`) here; the
agent answers it with the same per-caller workers the gateway uses (`pool.Workers`: one process per user,
which becomes that user before reading anything), so the kernel of the storage node checks the caller's
own rights, with the node's user database (the name is looked up here, as NFS idmapping does). Budgets stay
with the gateway, which charges the metadata operations the answer reports. The agent runs as root to
become callers (as a non-root user it serves only itself); it refuses questions for root unless started with
`--allow-root`. Every request is signed (channel.py); a bad one gets one error line and the connection
closes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import pwd
import ssl
import sys

from frontdesk.errors import FrontdeskError, Unauthenticated, UserError
from frontdesk.storage.channel import Replay, load_key, open_request, seal_answer
from frontdesk.storage.pool import Identity, Workers
from frontdesk.tls import HANDSHAKE_S, is_loopback, server_context

__all__ = ["StorageAgent", "main"]

log = logging.getLogger("frontdesk.storage.agent")

_FIELDS = ("op", "argv", "cwd", "limit", "cursor")


class StorageAgent:
    """Serves signed questions over TCP; one `Workers` pool for every gateway that holds the key."""

    def __init__(self, key: bytes, workers: Workers, allow_root: bool = False) -> None:
        self.key, self.workers, self.allow_root = key, workers, allow_root
        self.replay = Replay()

    def identity(self, user: object) -> Identity:
        if not isinstance(user, str) or not user:
            raise UserError("storage agent: the question names no user")
        try:
            pw = pwd.getpwnam(user)
        except KeyError:
            raise UserError(f"storage agent: no user {user!r} on this node") from None
        if pw.pw_uid == 0 and not self.allow_root:
            raise UserError("storage agent: questions as root are refused here (--allow-root)")
        return Identity(pw.pw_uid, pw.pw_gid, pw.pw_name)

    async def answer(self, line: bytes) -> bytes:
        """The signed answer line to one request line (raises Unauthenticated for a bad signature)."""
        body, nonce = open_request(self.key, line, self.replay)
        try:
            who = self.identity(body.get("user"))
            answer = await self.workers.ask(who, {k: body.get(k) for k in _FIELDS})
        except FrontdeskError as exc:
            answer = exc.to_payload()
        answer["node"] = os.uname().nodename
        return seal_answer(self.key, nonce, answer)

    async def serve_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        try:
            while line := await reader.readline():
                try:
                    writer.write(await self.answer(line))
                except Unauthenticated as exc:
                    log.warning("refused %s: %s", peer, exc.message)
                    writer.write(json.dumps({"error": "unauthenticated", "message": exc.message}).encode() + b"\n")
                    break
                await writer.drain()
        except (ConnectionError, asyncio.LimitOverrunError, ValueError) as exc:
            log.warning("connection from %s: %s", peer, exc)
        finally:
            writer.close()

    async def run(self, host: str, port: int, tls: ssl.SSLContext | None = None) -> None:
        timeout = HANDSHAKE_S if tls else None  # asyncio refuses a handshake timeout without TLS
        server = await asyncio.start_server(
            self.serve_connection, host, port, limit=16 * 1024 * 1024, ssl=tls, ssl_handshake_timeout=timeout
        )
        addr = server.sockets[0].getsockname()
        print(f"storage agent listening on {addr[0]}:{addr[1]}", file=sys.stderr, flush=True)
        try:
            async with server:
                await server.serve_forever()
        finally:
            await self.workers.close()


def _listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise UserError(f"--listen: expected HOST:PORT, got {text!r}")
    return host or "0.0.0.0", int(port)


def _tls(host: str, cert: str | None, key: str | None, plain: bool) -> ssl.SSLContext | None:
    """The listener's TLS context; UserError for a non-loopback plain listener not explicitly allowed."""
    if bool(cert) != bool(key):
        raise UserError("--tls-cert and --tls-key go together")
    if cert and key:
        return server_context(cert, key)
    if not plain and not is_loopback(host):
        raise UserError(f"--listen {host}: not loopback; give --tls-cert/--tls-key, or --insecure-plaintext")
    return None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="frontdesk-storage-agent", description=__doc__.splitlines()[0])
    p.add_argument("--listen", default="0.0.0.0:7755", help="HOST:PORT (default 0.0.0.0:7755)")
    p.add_argument("--key-file", required=True, help="the shared key (0600), the same as the gateways'")
    p.add_argument("--timeout-s", type=float, default=120.0, help="one question's limit")
    p.add_argument("--idle-s", type=float, default=600.0, help="an idle per-user worker ends")
    p.add_argument("--no-inotify", action="store_true", help="check directory mtime/ctime instead")
    p.add_argument("--allow-root", action="store_true", help="answer questions asked as root")
    p.add_argument("--tls-cert", help="PEM certificate: the gateway connects with TLS ([storage] agent_tls_ca)")
    p.add_argument("--tls-key", help="its PEM private key (0600)")
    p.add_argument("--insecure-plaintext", action="store_true", help="listen off loopback without TLS")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    try:
        host, port = _listen(args.listen)
        tls = _tls(host, args.tls_cert, args.tls_key, args.insecure_plaintext)
        agent = StorageAgent(load_key(args.key_file), Workers(args.timeout_s, not args.no_inotify, args.idle_s))
        asyncio.run(agent.run(host, port, tls))
    except (FrontdeskError, OSError) as exc:
        print(f"frontdesk-storage-agent: {getattr(exc, 'message', exc)}", file=sys.stderr)
        return 2 if isinstance(exc, UserError) else 1
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
