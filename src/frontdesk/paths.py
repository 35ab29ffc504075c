"""Where a gateway keeps its state and its socket. Stdlib only (os, pathlib): every client imports this."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["default_home", "socket_path_from_env"]


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


def socket_path_from_env() -> Path:
    """The gateway socket a client should use, from FRONTDESK_SOCKET or the default layout."""
    env = os.environ.get("FRONTDESK_SOCKET")
    if env:
        return Path(env)
    return _default_runtime_dir(default_home()) / "gateway.sock"
