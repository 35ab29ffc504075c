"""Start the gateway: bind the Unix socket (0600) and optional TCP, take the state lock, run uvicorn."""

from __future__ import annotations

import fcntl
import json
import logging
import os
import socket
import stat
import sys
from pathlib import Path
from typing import Any

from frontdesk.config import Settings, load_settings
from frontdesk.errors import ConfigError, Conflict, UserError

__all__ = ["serve", "bind_unix"]


def bind_unix(path: Path) -> socket.socket:
    """Bind the gateway socket with mode 0600, replacing a stale socket file but never a live gateway."""
    path.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(path.parent, stat.S_IRWXU)
    if path.exists():
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(str(path))
        except OSError:
            path.unlink()
        else:
            raise Conflict(f"a gateway already listens on {path}")
        finally:
            probe.close()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(str(path))
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(512)
    return sock


def _bind_tcp(listen: str) -> socket.socket:
    host, _, port = listen.rpartition(":")
    if not host or not port.isdigit():
        raise UserError(f"--listen expects HOST:PORT, got {listen!r}")
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), int(port)))
    except OSError as exc:
        raise UserError(f"cannot listen on {listen}: {exc.strerror}") from None
    sock.listen(512)
    return sock


def _lock(settings: Settings) -> Any:
    settings.home.mkdir(parents=True, exist_ok=True)
    fh = open(settings.home / "gateway.lock", "w")
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise Conflict(f"another gateway already runs on {settings.home}") from None
    fh.write(str(os.getpid()))
    fh.flush()
    return fh


def serve(
    config: str | None = None,
    backend: str | None = None,
    listen: str | None = None,
    token: str | None = None,
    log_level: str = "warning",
    announce_json: bool = False,
) -> int:
    """Run until stopped; returns the exit code."""
    import uvicorn

    from frontdesk.api.app import create_app
    from frontdesk.gateway import Gateway

    settings = load_settings(config, backend=backend, listen=listen, token=token)
    if settings.listen and not settings.token:
        raise ConfigError("--listen needs a bearer token (--token, FRONTDESK_TOKEN or [gateway] token)")
    logging.basicConfig(
        level=log_level.upper(), stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    lock = _lock(settings)
    sockets = [bind_unix(settings.socket)]
    if settings.listen:
        sockets.append(_bind_tcp(settings.listen))
    gw = Gateway(settings)
    app = create_app(gw)
    cfg = uvicorn.Config(app, log_level=log_level, access_log=False, lifespan="on", timeout_graceful_shutdown=2)

    class _Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            if gw.loop is not None:
                gw.loop.call_soon_threadsafe(gw.begin_shutdown)
            super().handle_exit(sig, frame)

    server = _Server(cfg)
    info = {
        "socket": str(settings.socket),
        "listen": settings.listen,
        "backend": settings.backend,
        "home": str(settings.home),
        "pid": os.getpid(),
    }
    if announce_json:
        print(json.dumps(info), flush=True)
    else:
        print(
            f"frontdesk gateway on {settings.socket}"
            + (f" and {settings.listen}" if settings.listen else "")
            + f" (backend {settings.backend}, state {settings.home})",
            file=sys.stderr,
            flush=True,
        )
    try:
        server.run(sockets=sockets)
    finally:
        try:
            settings.socket.unlink()
        except OSError:
            pass
        lock.close()
    return 0
