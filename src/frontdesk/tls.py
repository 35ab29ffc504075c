"""TLS on the gateway's TCP listener and for every client that speaks TCP to it (docs/facility.md, "TLS").

A bearer token is the credential itself, and a MUNGE credential is good for the request it names: neither may
cross a network in plain text. So a client sends either over TCP only inside TLS (an `https://` URL, the server
verified against `[gateway] tls_ca` / FRONTDESK_TLS_CA or the system store), or to a loopback address; it never
falls back to plain text. The gateway listens on a non-loopback TCP address only with `[gateway] tls_cert` and
`tls_key`, unless the site writes `insecure_plaintext = true`. Unix sockets are untouched: the kernel names the
peer. `ssl` and `ipaddress` are imported here only when a TCP connection is made: the Unix-socket hot path pays
nothing.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass

from frontdesk.errors import ConfigError, GatewayUnavailable

TYPE_CHECKING = False
if TYPE_CHECKING:
    import ssl

__all__ = [
    "Endpoint",
    "client_ca",
    "client_context",
    "connect",
    "endpoint",
    "is_loopback",
    "refuse_plaintext",
    "server_context",
]

URL_KEY = "FRONTDESK_URL / [gateway] url"
CA_KEY = "[gateway] tls_ca (FRONTDESK_TLS_CA)"
HANDSHAKE_S = 10.0
"""How long the gateway waits for a TLS handshake before dropping the connection."""


@dataclass(frozen=True)
class Endpoint:
    """Where a gateway's TCP listener is: `http://` (plain) or `https://` (TLS), a host and a port."""

    tls: bool
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}"


def endpoint(url: str) -> Endpoint:
    """The endpoint of `http[s]://HOST[:PORT][/...]` (`[::1]` for IPv6); GatewayUnavailable when not one."""
    scheme, sep, rest = url.partition("://")
    where = rest.split("/", 1)[0]
    if where.startswith("["):
        host, _, port = where[1:].partition("]")
        port = port.removeprefix(":")
    else:
        host, _, port = where.partition(":")
    good_port = port == "" or (port.isascii() and port.isdigit() and 0 < int(port) < 65536)
    unclosed = where.startswith("[") and "]" not in where  # http://[::1 would reach [::1]:80
    if not sep or scheme.lower() not in ("http", "https") or not host or not good_port or unclosed:
        raise GatewayUnavailable(f"{URL_KEY} {url[:200]!r} is not http[s]://HOST[:PORT]")
    tls = scheme.lower() == "https"
    return Endpoint(tls, host, int(port) if port else (443 if tls else 80))


def is_loopback(host: str) -> bool:
    """Whether `host` is this machine by a loopback address or the name localhost (never resolved: a name's
    address can change, a literal cannot)."""
    name = host.strip("[]").lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    import ipaddress

    try:
        return ipaddress.ip_address(name.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def refuse_plaintext(where: Endpoint, what: str) -> None:
    """ConfigError when `what` (a bearer token, a MUNGE credential) would go in plain text off this machine."""
    if not where.tls and not is_loopback(where.host):
        raise ConfigError(
            f"refusing to send a {what} in plain text to {where}: set {URL_KEY} to https://{where.host}:{where.port} "
            f"(the gateway's [gateway] tls_cert/tls_key; {CA_KEY} names the CA to check it with)"
        )


def client_ca() -> str | None:
    """The CA bundle that verifies the gateway: FRONTDESK_TLS_CA, else the site config's `[gateway] tls_ca`,
    else None (the system's store)."""
    ca = os.environ.get("FRONTDESK_TLS_CA")
    if ca:
        return ca
    from frontdesk.paths import site_gateway

    value = site_gateway().get("tls_ca")
    return value if isinstance(value, str) and value else None


_CONTEXTS: dict[tuple[str | None, float], ssl.SSLContext] = {}
"""Client contexts by CA bundle and its mtime: loading a bundle costs more than a handshake, and a process that
talks to the gateway many times (the MCP server, a gateway's subscription) loads it once (again when it changes)."""


def client_context(ca: str | None) -> ssl.SSLContext:
    """A client context: TLS 1.2 or later, the server's certificate and host name checked against `ca` (a PEM
    bundle) or the system store; ConfigError (one line, naming the key) when `ca` cannot be read."""
    try:
        stamp = os.stat(ca).st_mtime if ca else 0.0
    except OSError as exc:
        raise ConfigError(f"{CA_KEY} {ca}: {exc.strerror}") from None
    if (ca, stamp) not in _CONTEXTS:
        _CONTEXTS.clear()
        _CONTEXTS[(ca, stamp)] = _new_client_context(ca)
    return _CONTEXTS[(ca, stamp)]


def _new_client_context(ca: str | None) -> ssl.SSLContext:
    import ssl

    try:
        ctx = ssl.create_default_context(cafile=ca) if ca else ssl.create_default_context()
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"{CA_KEY} {ca}: {getattr(exc, 'strerror', None) or exc}") from None
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    return ctx


def connect(where: Endpoint, timeout: float | None, ca: str | None = None) -> socket.socket:
    """A connected socket to `where`, inside TLS when it says https (checked, never downgraded); the
    socket's own errors pass through, a failed check is GatewayUnavailable naming it."""
    ctx = client_context(ca or client_ca()) if where.tls else None  # before connecting: a bad CA sends nothing
    sock = socket.create_connection((where.host, where.port), timeout=timeout)
    if ctx is None:
        return sock
    import ssl

    try:
        return ctx.wrap_socket(sock, server_hostname=where.host)
    except ssl.SSLCertVerificationError as exc:
        sock.close()
        raise GatewayUnavailable(
            f"the gateway at {where} failed TLS verification ({exc.verify_message}) against "
            f"{ca or client_ca() or 'the system store'}: check {CA_KEY}"
        ) from None
    except (ssl.SSLError, OSError) as exc:
        sock.close()
        raise GatewayUnavailable(f"no TLS with the gateway at {where}: {exc}") from None


def server_context(cert: str, key: str) -> ssl.SSLContext:
    """The gateway's TLS context from `[gateway] tls_cert` and `tls_key` (PEM; the key 0600 and ours), TLS 1.2 or
    later; ConfigError (one line, naming the keys) when they cannot be read or do not match."""
    import ssl

    from frontdesk.config import file_problem

    for name, path in (("tls_cert", cert), ("tls_key", key)):
        if problem := file_problem(path):
            raise ConfigError(f"[gateway] {name} {path}: {problem}")
    st = os.stat(key)
    if st.st_mode & 0o077 or st.st_uid not in (0, os.geteuid()):
        raise ConfigError(f"[gateway] tls_key {key}: the private key must be the service's and 0600 (chmod 600 {key})")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_cert_chain(cert, key)
    except ssl.SSLError as exc:
        raise ConfigError(
            f"[gateway] tls_cert {cert} / tls_key {key}: not a PEM certificate and its key ({exc.reason or exc})"
        ) from None
    except OSError as exc:
        raise ConfigError(f"[gateway] tls_cert {cert} / tls_key {key}: {exc.strerror or exc}") from None
    return ctx
