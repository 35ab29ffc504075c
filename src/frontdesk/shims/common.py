"""What every shim shares at run time: finding the real command, passing through, the cached view, the user
(how Slurm prints states and times is backends/slurm/clitext.py)."""

from __future__ import annotations

import os
import pwd
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

__all__ = [
    "current_user",
    "exec_real",
    "fetch_view",
    "find_real",
]


def find_real(name: str) -> str | None:
    """The real `name` on PATH, skipping this shim's directory (and FRONTDESK_SHIM_DIR)."""
    skip = {os.path.realpath(os.path.dirname(os.path.abspath(sys.argv[0])))}
    if os.environ.get("FRONTDESK_SHIM_DIR"):
        skip.add(os.path.realpath(os.environ["FRONTDESK_SHIM_DIR"]))
    real = os.environ.get(f"FRONTDESK_REAL_{name.upper()}")
    if real:
        return real
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if not entry or os.path.realpath(entry) in skip:
            continue
        cand = os.path.join(entry, name)
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return None


def exec_real(name: str, argv: Sequence[str], why: str | None = None) -> NoReturn:
    """Replace this process with the real command (same arguments); exit 127 when there is none."""
    real = find_real(name)
    if real is None:
        sys.stderr.write(f"{name}: frontdesk shim: no real {name} on PATH to pass this to\n")
        raise SystemExit(127)
    if why and os.environ.get("FRONTDESK_SHIM_VERBOSE"):
        sys.stderr.write(f"{name}: frontdesk shim: passing through to {real} ({why})\n")
    os.execv(real, [name, *argv])


def _connect(timeout: float) -> socket.socket:
    url = os.environ.get("FRONTDESK_URL")
    if url:  # inside TLS for https:// (frontdesk.tls)
        from frontdesk.tls import connect, endpoint

        return connect(endpoint(url), timeout)
    path = os.environ.get("FRONTDESK_SOCKET")
    if not path:
        from frontdesk.paths import socket_path_from_env

        path = str(socket_path_from_env())
    from frontdesk.paths import check_listener, check_rendezvous, trusted_uids

    trusted = trusted_uids()
    check_rendezvous(path, trusted)  # a socket someone else controls: nothing is sent (the real command answers)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
        check_listener(sock, path, trusted)
    except BaseException:
        sock.close()
        raise
    return sock


def http_get(path: str, timeout: float = 10.0) -> Any:
    """GET one JSON answer from the gateway over a bare socket (HTTP/1.0).

    http.client would pull in ssl and email, several times the start-up of the rest of a shim."""
    import json

    from frontdesk.errors import FrontdeskError, GatewayUnavailable, from_payload
    from frontdesk.wire import CutOff, parse_answer, request_head

    url = os.environ.get("FRONTDESK_URL")
    token = os.environ.get("FRONTDESK_TOKEN") if url else None  # never over a socket
    if url and token:
        from frontdesk.tls import endpoint, refuse_plaintext

        refuse_plaintext(endpoint(url), "bearer token")  # (ConfigError: the shim's caller prints it)
    head = request_head("GET", path, auth=f"Bearer {token}" if token else None, http10=True)
    try:
        with _connect(timeout) as sock:
            sock.sendall(head)
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
    except OSError as exc:
        raise GatewayUnavailable(f"cannot reach the gateway: {exc.strerror or exc}") from None
    try:
        answer = parse_answer(b"".join(chunks))
        status = answer.status
        payload = json.loads(answer.body) if answer.body else None
    except (CutOff, ValueError):
        raise FrontdeskError("the gateway sent an answer the shim cannot read") from None
    if status >= 400:
        if isinstance(payload, dict) and "error" in payload:
            raise from_payload(payload)
        raise FrontdeskError(f"gateway answered HTTP {status}")
    return payload


def fetch_view(history: bool = False) -> dict[str, Any]:
    """The gateway's cached view of the cluster (raises GatewayUnavailable / FrontdeskError)."""
    view: dict[str, Any] = http_get("/v1/slurm/squeue" + ("?history=true" if history else ""))
    return view


def current_user() -> str:
    """The calling user's name."""
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


def gateway_down(name: str, argv: Sequence[str], exc: Exception) -> NoReturn:
    """No gateway: answer with the real command (status questions only)."""
    from frontdesk.errors import ConfigError

    if isinstance(exc, ConfigError) and not os.environ.get("FRONTDESK_SHIM_STRICT"):
        sys.stderr.write(f"{name}: frontdesk: {exc}\n")  # a refusal the user must fix: said, then the real one runs
    if os.environ.get("FRONTDESK_SHIM_STRICT"):
        sys.stderr.write(f"{name}: frontdesk gateway unavailable: {exc}\n")
        raise SystemExit(69)
    exec_real(name, argv, f"gateway unavailable: {exc}")


def script_dir() -> Path:
    """The directory of the running shim."""
    return Path(os.path.abspath(sys.argv[0])).parent
