"""Start the gateway: bind the Unix socket and optional TCP, take the state lock, run uvicorn.

The socket's directory: created here with mode 0700 (per-user) or 0755 (facility) when missing; an existing
one must belong to us (or root) and be writable by nobody else, and its mode is never changed. The socket
is 0600 per-user, 0666 in facility mode (every user connects; the kernel says who, SO_PEERCRED).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import socket
import sqlite3
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from frontdesk.config import Settings, load_settings
from frontdesk.errors import ConfigError, Conflict, FrontdeskError, UserError

if TYPE_CHECKING:
    import ssl

    import uvicorn

    from frontdesk.gateway import Gateway

__all__ = ["serve", "bind_unix", "socket_dir"]


def socket_dir(directory: Path, facility: bool = False) -> None:
    """Make the socket's directory ours with the right mode, or refuse a directory someone else controls."""
    want = 0o755 if facility else 0o700
    try:
        directory.parent.mkdir(parents=True, exist_ok=True)
        os.mkdir(directory, want)
        os.chmod(directory, want)  # ours, just made: the umask must not loosen or tighten it
        return
    except FileExistsError:
        pass
    st = os.stat(directory)
    if not stat.S_ISDIR(st.st_mode):
        raise ConfigError(f"socket directory {directory} is not a directory")
    if st.st_uid not in (os.geteuid(), 0):
        raise ConfigError(
            f"socket directory {directory} belongs to uid {st.st_uid}, not to us: refusing to start there"
        )
    sticky_root = st.st_uid == 0 and st.st_mode & stat.S_ISVTX
    if st.st_mode & 0o022 and not sticky_root:
        raise ConfigError(
            f"socket directory {directory} is writable by others (mode {stat.S_IMODE(st.st_mode):04o}): "
            "refusing to start there"
        )


def bind_unix(path: Path, facility: bool = False) -> socket.socket:
    """Bind the gateway socket (0600, or 0666 in facility mode), replacing a stale socket but never a live gateway."""
    socket_dir(path.parent, facility)
    if path.exists() or path.is_symlink():
        if not stat.S_ISSOCK(os.lstat(path).st_mode):
            raise ConfigError(f"{path} exists and is not a socket: refusing to replace it")
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
    os.chmod(path, 0o666 if facility else 0o600)
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


class StateUnusable(FrontdeskError):
    """The state directory cannot be written at start (read-only, full, gone): one line, not a traceback."""

    code = "state_unusable"


@contextlib.contextmanager
def _state_usable(settings: Settings) -> Any:
    try:
        yield
    except (OSError, sqlite3.OperationalError) as exc:
        why = f"{exc.strerror}: {exc.filename}" if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise StateUnusable(f"the gateway cannot start on {settings.home}: {why}") from None


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


def _settings(
    config: str | None, backend: str | None, listen: str | None, token: str | None, facility: bool
) -> Settings:
    """The gateway's settings, refusing a token on the command line and a TCP listener without authentication."""
    if token is not None:
        raise ConfigError(
            "--token would show the token to every user (ps): put it in FRONTDESK_TOKEN, or its sha256 in "
            "[gateway] tokens_file / [gateway.tokens] of a 0600 frontdesk.toml"
        )
    settings = load_settings(config, backend=backend, listen=listen, mode="facility" if facility else None)
    _check_sizes(settings)
    from frontdesk.configcheck import check_settings

    check_settings(settings)  # every table's keys: a misspelt security setting refuses the start (exit 2)
    if settings.listen:
        from frontdesk.api.auth import tokens_from_settings

        munge = settings.section("gateway").get("munge") is True
        if not settings.token and not len(tokens_from_settings(settings)) and not munge:
            raise ConfigError(
                "--listen needs a bearer token (FRONTDESK_TOKEN, [gateway] tokens_file or [gateway.tokens]) "
                "or MUNGE ([gateway] munge = true)"
            )
    return settings


def _check_sizes(settings: Settings) -> None:
    """[local] memory and output_max_bytes are sizes above 0 (else the backend's parse was a traceback)."""
    from frontdesk.spec.units import parse_memory

    local = settings.section("local")
    for where, value in (
        ("[local] memory (FRONTDESK_LOCAL_MEMORY)", settings.local_memory),
        ("[local] output_max_bytes", local.get("output_max_bytes")),
    ):
        if value is None:
            continue
        try:
            size = parse_memory(value)
        except ValueError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        if size <= 0:
            raise ConfigError(f"{where}: expected a size above 0 such as 16G, got {value!r}")


def _listener_tls(settings: Settings) -> ssl.SSLContext | None:
    """The TCP listener's TLS context (`[gateway] tls_cert` + `tls_key`), None for plain text, which only a
    loopback address or an explicit `insecure_plaintext = true` (logged as a warning) gets."""
    from frontdesk.tls import is_loopback, server_context

    insecure = settings.section("gateway").get("insecure_plaintext", False)
    if not isinstance(insecure, bool):
        raise ConfigError(f"[gateway] insecure_plaintext: expected true or false, got {insecure!r}")
    if bool(settings.tls_cert) != bool(settings.tls_key):
        raise ConfigError("[gateway] tls_cert and tls_key go together: set both (FRONTDESK_TLS_CERT/_KEY) or neither")
    if settings.tls_cert and settings.tls_key:
        return server_context(settings.tls_cert, settings.tls_key)
    host = str(settings.listen).rpartition(":")[0]
    if is_loopback(host):
        return None
    if not insecure:
        raise ConfigError(
            f"[gateway] listen = {settings.listen!r} is not a loopback address: bearer tokens and MUNGE credentials "
            "would cross the network in plain text; set [gateway] tls_cert and tls_key (or insecure_plaintext = true)"
        )
    logging.getLogger("frontdesk.server").warning(
        "listening on %s WITHOUT TLS (insecure_plaintext = true): tokens and MUNGE credentials cross the network "
        "in plain text; set [gateway] tls_cert and tls_key",
        settings.listen,
    )
    return None


def _server(gw: Gateway, log_level: str, tcp: socket.socket | None, tls: ssl.SSLContext | None) -> uvicorn.Server:
    """Uvicorn over the gateway's app; a stop signal begins the gateway's shutdown first. The TCP listener `tcp`
    is served inside `tls` when given (uvicorn's own ssl setting would cover the Unix socket too)."""
    import uvicorn

    from frontdesk.api.app import create_app
    from frontdesk.api.connection import peer_protocol

    app = create_app(gw)
    cfg = uvicorn.Config(
        app,
        http=peer_protocol(),
        log_level=log_level,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=2,
    )

    class _Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if tcp is None or self.should_exit:
                return
            loop = asyncio.get_running_loop()

            def protocol() -> asyncio.Protocol:
                state = {"config": cfg, "server_state": self.server_state, "app_state": self.lifespan.state}
                made: asyncio.Protocol = cfg.http_protocol_class(**state, _loop=loop)  # type: ignore[call-arg]
                return made

            if tls is None:
                self.servers.append(await loop.create_server(protocol, sock=tcp, backlog=512))
                return
            from frontdesk.api.tlsgate import gate  # the peer counted before its handshake, then TLS

            self.servers.append(await loop.create_server(gate(protocol, tls), sock=tcp, backlog=512))

        def handle_exit(self, sig: int, frame: Any) -> None:
            if gw.loop is not None:
                gw.loop.call_soon_threadsafe(gw.begin_shutdown)
            super().handle_exit(sig, frame)

    return _Server(cfg)


def _announce(settings: Settings, announce_json: bool) -> None:
    """Where the gateway listens: one JSON line on stdout (--announce-json), or one line on stderr."""
    if announce_json:
        info = {
            "socket": str(settings.socket),
            "listen": settings.listen,
            "tls": bool(settings.listen and settings.tls_cert),
            "backend": settings.backend,
            "mode": settings.mode,
            "home": str(settings.home),
            "pid": os.getpid(),
        }
        print(json.dumps(info), flush=True)
        return
    print(
        f"frontdesk gateway on {settings.socket}"
        + (f" and {settings.listen}" + (" (TLS)" if settings.tls_cert else "") if settings.listen else "")
        + f" (backend {settings.backend}, state {settings.home})",
        file=sys.stderr,
        flush=True,
    )


def _policy_usable(gw: Any) -> None:
    """A refused `[policy]` with no earlier version to keep in force stops the start in one line."""
    from frontdesk.policy.plugin import PolicyPlugin

    for plugin in gw.plugins:
        if isinstance(plugin, PolicyPlugin):
            plugin.check_start(gw.store.conn)


def serve(
    config: str | None = None,
    backend: str | None = None,
    listen: str | None = None,
    token: str | None = None,
    log_level: str = "warning",
    announce_json: bool = False,
    facility: bool = False,
) -> int:
    """Run until stopped (settings, lock, sockets, gateway, server); returns the exit code."""
    from frontdesk.gateway import Gateway

    settings = _settings(config, backend, listen, token, facility)
    logging.basicConfig(
        level=log_level.upper(), stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    tls = _listener_tls(settings) if settings.listen else None  # checked before anything is bound or locked
    with _state_usable(settings):  # a read-only or full state disk: one line
        lock = _lock(settings)
    sockets = [bind_unix(settings.socket, settings.mode == "facility")]
    tcp = _bind_tcp(settings.listen) if settings.listen else None
    from frontdesk.guard.secrets import redact

    with _state_usable(settings):
        gw = Gateway(settings, redact=redact)  # the composition root hands the core its redactor
    try:
        _policy_usable(gw)
    except ConfigError:
        settings.socket.unlink(missing_ok=True)
        lock.close()
        raise
    server = _server(gw, log_level, tcp, tls)
    _announce(settings, announce_json)
    try:
        server.run(sockets=sockets)
    finally:
        try:
            settings.socket.unlink()
        except OSError:
            pass
        lock.close()
    return 0
