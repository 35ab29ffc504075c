"""What every shim shares: finding the real command, passing through, the cached view, users, times."""

from __future__ import annotations

import os
import pwd
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from frontdesk.durations import parse_slurm_clock

__all__ = [
    "ShimArgs",
    "current_user",
    "exec_real",
    "fetch_view",
    "find_real",
    "fmt_duration",
    "short_state",
    "split_list",
    "user_name",
]

SHORT_STATES = {
    "PENDING": "PD",
    "RUNNING": "R",
    "SUSPENDED": "S",
    "COMPLETING": "CG",
    "COMPLETED": "CD",
    "CONFIGURING": "CF",
    "CANCELLED": "CA",
    "FAILED": "F",
    "TIMEOUT": "TO",
    "PREEMPTED": "PR",
    "NODE_FAIL": "NF",
    "BOOT_FAIL": "BF",
    "DEADLINE": "DL",
    "OUT_OF_MEMORY": "OOM",
    "REQUEUED": "RQ",
    "REQUEUE_HOLD": "RH",
    "REQUEUE_FED": "RF",
    "RESIZING": "RS",
    "RESV_DEL_HOLD": "RD",
    "REVOKED": "RV",
    "SIGNALING": "SI",
    "SPECIAL_EXIT": "SE",
    "STAGE_OUT": "SO",
    "STOPPED": "ST",
}
LONG_STATES = {v: k for k, v in SHORT_STATES.items()}


class ShimArgs(Exception):
    """Raised by a shim's parser for a flag it does not handle: the real command gets the whole line."""


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
    if url:
        host, _, port = url.split("://", 1)[-1].rstrip("/").partition(":")
        return socket.create_connection((host, int(port or 80)), timeout=timeout)
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

    token = os.environ.get("FRONTDESK_TOKEN") if os.environ.get("FRONTDESK_URL") else None  # never over a socket
    head = f"GET {path} HTTP/1.0\r\nHost: localhost\r\nAccept: application/json\r\n"
    if token:
        head += f"Authorization: Bearer {token}\r\n"
    try:
        with _connect(timeout) as sock:
            sock.sendall((head + "\r\n").encode())
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
    except OSError as exc:
        raise GatewayUnavailable(f"cannot reach the gateway: {exc.strerror or exc}") from None
    raw = b"".join(chunks)
    header, _, body = raw.partition(b"\r\n\r\n")
    try:
        status = int(header.split(b" ", 2)[1])
        payload = json.loads(body) if body else None
    except (IndexError, ValueError):
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


def user_name(user_id: str) -> str:
    """`root` from scontrol's `root(0)`."""
    return user_id.split("(", 1)[0]


def split_list(values: Sequence[str] | None) -> list[str]:
    """Comma lists given once or many times (`-j 1,2 -j 3`)."""
    out: list[str] = []
    for v in values or ():
        out += [x.strip() for x in v.split(",") if x.strip()]
    return out


def _to_seconds(text: str) -> int | None:
    text = text.strip()
    if not text or text in ("UNLIMITED", "INVALID", "N/A", "NOT_SET"):
        return None
    try:
        return int(parse_slurm_clock(text, bare_unit=1))
    except ValueError:
        return None


def fmt_duration(raw: str, unlimited: str = "UNLIMITED") -> str:
    """Slurm's compact time: `0:05`, `1:00:00`, `2-00:00:00` from scontrol's `00:00:05`."""
    secs = _to_seconds(raw)
    if secs is None:
        return unlimited if raw.strip() == "UNLIMITED" else raw.strip() or "N/A"
    days, rest = divmod(secs, 86400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    if days:
        return f"{days}-{h:02d}:{m:02d}:{s:02d}"
    if h:
        return f"{h}:{m:02d}:{s:02d}"
    return f"{m}:{s:02d}"


def short_state(state: str) -> str:
    """`PD` for PENDING (squeue %t)."""
    word = state.split(" ", 1)[0]
    return SHORT_STATES.get(word, word[:2])


def gateway_down(name: str, argv: Sequence[str], exc: Exception) -> NoReturn:
    """No gateway: answer with the real command (status questions only)."""
    if os.environ.get("FRONTDESK_SHIM_STRICT"):
        sys.stderr.write(f"{name}: frontdesk gateway unavailable: {exc}\n")
        raise SystemExit(69)
    exec_real(name, argv, f"gateway unavailable: {exc}")


def script_dir() -> Path:
    """The directory of the running shim."""
    return Path(os.path.abspath(sys.argv[0])).parent
