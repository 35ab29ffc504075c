"""Where a gateway keeps its state and its socket, and whom a client trusts there.

Stdlib only (os, pathlib): every client imports this. The site's config (/etc/frontdesk/frontdesk.toml,
or FRONTDESK_SITE_CONFIG) is parsed only when it exists, and only for its `[gateway]` table.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable
from pathlib import Path

from frontdesk.errors import RendezvousRefused
from frontdesk.rendezvous import refusal

TYPE_CHECKING = False  # typing costs a fresh process ~1.5 ms: annotations only (the CLI's hot path)
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "FACILITY_HOME",
    "FACILITY_SOCKET",
    "SITE_CONFIG",
    "check_listener",
    "check_rendezvous",
    "peer_ids",
    "default_home",
    "site_config_path",
    "site_gateway",
    "socket_path_from_env",
    "trusted_uids",
]

SITE_CONFIG = Path("/etc/frontdesk/frontdesk.toml")
"""The site's config: `[gateway] mode = "facility"` there sends every client to the facility gateway."""

FACILITY_SOCKET = Path("/run/frontdesk/gateway.sock")
"""The facility gateway's socket unless the site names another."""

FACILITY_HOME = Path("/var/lib/frontdesk")
"""The facility gateway's state unless FRONTDESK_HOME names another directory."""


def default_home() -> Path:
    """Where state lives when FRONTDESK_HOME is not set."""
    env = os.environ.get("FRONTDESK_HOME")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_STATE_HOME")
    return Path(xdg) / "frontdesk" if xdg else Path.home() / ".local" / "state" / "frontdesk"


def _default_runtime_dir(home: Path) -> Path:
    if os.environ.get("FRONTDESK_HOME"):
        return home / "run"
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    return Path(xdg) / "frontdesk" if xdg else Path(f"/tmp/frontdesk-{os.getuid()}")


def site_config_path() -> Path | None:
    """The site's config file, if there is one (FRONTDESK_SITE_CONFIG, else /etc/frontdesk/frontdesk.toml)."""
    env = os.environ.get("FRONTDESK_SITE_CONFIG")
    path = Path(env) if env else SITE_CONFIG
    return path if path.is_file() else None


def site_gateway() -> dict[str, Any]:
    """The site config's `[gateway]` table ({} without a site config; unreadable files count as none)."""
    path = site_config_path()
    if path is None:
        return {}
    import tomllib

    try:
        with path.open("rb") as fh:
            table = tomllib.load(fh).get("gateway", {})
    except (OSError, tomllib.TOMLDecodeError):
        return {}
    return table if isinstance(table, dict) else {}


def socket_path_from_env() -> Path:
    """The socket a client should use: FRONTDESK_SOCKET, the site's facility gateway, or the user's own."""
    env = os.environ.get("FRONTDESK_SOCKET")
    if env:
        return Path(env)
    site = site_gateway()
    if site.get("mode") == "facility":
        return Path(str(site.get("socket") or FACILITY_SOCKET))
    return _default_runtime_dir(default_home()) / "gateway.sock"


def trusted_uids() -> tuple[int, ...]:
    """Who may own the socket a client talks to: itself, root, and the site's service user."""
    uids = [os.getuid(), 0]
    service = site_gateway().get("service_user")
    if isinstance(service, str) and service:
        import pwd

        try:
            uids.append(pwd.getpwnam(service).pw_uid)
        except KeyError:
            pass
    return tuple(dict.fromkeys(uids))


def peer_ids(sock: Any) -> tuple[int, int, int] | None:
    """(pid, uid, gid) of the other end of a connected Unix socket, from SO_PEERCRED (None elsewhere)."""
    import struct

    try:
        if sock.family != socket.AF_UNIX:
            return None
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except (OSError, AttributeError):
        return None
    pid, uid, gid = struct.unpack("3i", raw)
    return pid, uid, gid


def check_rendezvous(path: str | Path, trusted: Iterable[int]) -> None:
    """Before connecting: the socket and its directory belong to a trusted uid and nobody else can swap them."""
    why = refusal(str(path), tuple(trusted))
    if why is not None:
        raise RendezvousRefused(why)


def check_listener(sock: socket.socket, path: str | Path, trusted: Iterable[int]) -> None:
    """After connecting: the listening process runs as a trusted uid (closes the race between check and connect)."""
    found = peer_ids(sock)
    if found is not None and found[1] not in set(trusted):
        raise RendezvousRefused(
            f"refusing {path}: the process listening there runs as uid {found[1]} (nothing was sent)"
        )
