"""Zero setup: the first client call starts the user's own gateway when none answers (like tmux's server).

Only for the per-user gateway at its default place: never when the client was pointed somewhere
(FRONTDESK_SOCKET, FRONTDESK_URL), never for a site's facility gateway, never with
FRONTDESK_NO_AUTOSTART=1. The gateway runs detached (its own session, stdin from /dev/null), logging to
`<state dir>/gateway.log`; the client that started it says so on stderr, once. Two clients at once start
one gateway: they take turns on `<state dir>/autostart.lock` and the second finds the first's answering
(the gateway's own lock on its state directory is the backstop). Imported only when a connection
failed, so the hot path pays nothing for it. Stdlib only.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path

from frontdesk.errors import GatewayUnavailable

__all__ = ["START_TIMEOUT", "allowed", "start_if_allowed"]

START_TIMEOUT = 60.0
"""How long a client waits for the gateway it started to answer (a cold start imports FastAPI)."""


def allowed(path: str | Path) -> bool:
    """Whether a client may start a gateway for this socket path (the user's own, default one only)."""
    from frontdesk.paths import _default_runtime_dir, default_home

    env = os.environ
    if env.get("FRONTDESK_NO_AUTOSTART") == "1" or env.get("FRONTDESK_URL") or env.get("FRONTDESK_SOCKET"):
        return False
    return Path(path) == _default_runtime_dir(default_home()) / "gateway.sock"


def _answers(path: str) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(2.0)
        try:
            probe.connect(path)
        except OSError:
            return False
    return True


_BOOT = "import os, sys; os.chdir(sys.argv[1]); from frontdesk.cli.main import main; sys.exit(main(['serve']))"
"""`frontdesk serve` from the state directory: -P and the chdir keep the user's cwd out of the gateway's
(and its shepherds') import path and off the daemon's working directory."""


def _spawn(home: Path, log: Path) -> int:
    from frontdesk.spawn import spawn_detached

    env = {k: v for k, v in os.environ.items() if k != "FRONTDESK_TOKEN"}
    return spawn_detached([sys.executable, "-P", "-c", _BOOT, str(home)], env, log)


def _exited(pid: int) -> bool:
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return done != 0


def _last_line(log: Path) -> str:
    try:
        lines = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "no log"
    return lines[-1] if lines else "no output"


def start_if_allowed(path: str | Path) -> bool:
    """Start the user's gateway for `path` and wait until it answers; False when autostart does not apply.

    Raises GatewayUnavailable (with the log's last line) when a started gateway does not come up.
    """
    if not allowed(path):
        return False
    import fcntl

    from frontdesk.paths import default_home

    home = default_home().absolute()
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    lock = os.open(home / "autostart.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second client waits here, then finds the first one's gateway
        if _answers(str(path)):
            return True
        log = home / "gateway.log"
        pid = _spawn(home, log)
        deadline = time.monotonic() + START_TIMEOUT
        while not _answers(str(path)):
            if _exited(pid) or time.monotonic() > deadline:
                raise GatewayUnavailable(f"could not start a gateway: {_last_line(log)} (log: {log})")
            time.sleep(0.05)
        sys.stderr.write(
            f"frontdesk: started your gateway (pid {pid}, log {log}); `frontdesk serve` runs one in the foreground\n"
        )
        return True
    finally:
        os.close(lock)
