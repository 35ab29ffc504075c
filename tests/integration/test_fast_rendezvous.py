"""The CLI fast path never trusts a gateway socket that the full client refuses (differential, real rendezvous).

Each case builds a real situation on disk (directories and sockets owned by a test user, by root or by another
test user; world- or group-writable directories; sticky ones; a symlink; a plain file; a listener of another
user behind the user's own socket file; nothing there) and asks, as the test user, both the full client's checks
(paths.check_rendezvous, connect, paths.check_listener) and the fast path's (cli/fast._connect). The fast path
may refuse more (it then falls back to the full client), never less. The status row and the read marks the fast
path also copies are compared byte for byte by tests/integration/test_cli_fast_path.py and
tests/integration/test_hooks_read_once.py.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from unix_users import ensure_user, reachable

SRC = reachable(Path(__file__).resolve().parents[2] / "src")
SYSTEM_PY = "/usr/bin/python3"  # the venv's interpreter lives under /root, which the test users cannot enter
USER, OTHER = "fdrv1", "fdrv2"
"""Test users of this file (created when missing, never deleted)."""

PROBE = """
import json, socket, sys
from frontdesk import paths
from frontdesk.cli import fast
from frontdesk.errors import RendezvousRefused

path = sys.argv[1]

def full():
    trusted = paths.trusted_uids()
    try:
        paths.check_rendezvous(path, trusted)
    except RendezvousRefused:
        return "refused"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
    except OSError:
        return "no gateway"
    try:
        paths.check_listener(s, path, trusted)
    except RendezvousRefused:
        return "refused"
    finally:
        s.close()
    return "trusted"

def quick():
    try:
        s = fast._connect(path, 5.0)
    except fast._Fallback:
        return "fallback"
    s.close()
    return "trusted"

print(json.dumps({"full": full(), "fast": quick()}))
"""

LISTEN = (
    "import socket, sys, time\n"
    "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
    "s.bind(sys.argv[1]); s.listen(8); print('ready', flush=True); time.sleep(600)\n"
)


def _uid(name: str) -> int:
    return ensure_user(name, home=False, shell="/usr/sbin/nologin").pw_uid


@dataclass(frozen=True)
class Case:
    """A rendezvous: the socket directory's owner and mode, what stands at the socket path, who listens."""

    name: str
    dir_owner: str | None  # None: no directory
    dir_mode: int = 0o700
    kind: str = "socket"  # socket | symlink | file | missing
    sock_owner: str = USER
    sock_mode: int = 0o600  # a socket's write bit is "may connect": a facility's is 0666
    listener: str = USER
    full: str = "trusted"
    fast: str = "trusted"


REFUSED = {"full": "refused", "fast": "fallback"}
CASES = [
    Case("own socket in own 0700 dir", USER),
    Case("root's socket in root's 0755 dir", "root", 0o755, sock_owner="root", sock_mode=0o666, listener="root"),
    Case("own socket in root's 0755 dir", "root", 0o755),
    Case("own socket in root's sticky 1777 dir", "root", 0o1777),
    Case("another user's socket in its 0711 dir", OTHER, 0o711, sock_owner=OTHER, listener=OTHER, **REFUSED),
    Case("another user's socket in own dir", USER, sock_owner=OTHER, listener="root", **REFUSED),
    Case("own socket in another user's 0711 dir", OTHER, 0o711, **REFUSED),
    Case("own dir world-writable 0777", USER, 0o777, **REFUSED),
    Case("own dir group-writable 0770", USER, 0o770, **REFUSED),
    Case("own sticky 1777 dir (not root's)", USER, 0o1777, **REFUSED),
    Case("root's dir 0777 without the sticky bit", "root", 0o777, **REFUSED),
    Case("a symlink to own socket", USER, kind="symlink", **REFUSED),
    Case("a plain file", USER, kind="file", **REFUSED),
    Case("own socket file, another user listening", USER, listener=OTHER, **REFUSED),
    Case("no socket", USER, kind="missing", full="no gateway", fast="fallback"),
    Case("no directory", None, kind="missing", full="no gateway", fast="fallback"),
]


@pytest.fixture(scope="module")
def base() -> Iterator[Path]:
    _uid(USER), _uid(OTHER)
    if not Path(SYSTEM_PY).exists():
        pytest.skip(f"{SYSTEM_PY} is needed to run the checks as a test user")
    root = Path(tempfile.mkdtemp(prefix="fd-rv-", dir="/tmp"))
    root.chmod(0o755)  # the test users pass through it
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _listen(path: Path, user: str) -> subprocess.Popen[str]:
    """A listener bound at `path` by a process of `user` (bound in a directory it owns, then moved there)."""
    spot = Path(tempfile.mkdtemp(prefix="l-", dir=path.parent.parent))
    spot.chmod(0o755)
    uid = pwd.getpwnam(user).pw_uid
    os.chown(spot, uid, -1)
    proc = subprocess.Popen(
        [SYSTEM_PY, "-c", LISTEN, str(spot / "s")],
        user=uid,
        group=pwd.getpwnam(user).pw_gid,
        stdout=subprocess.PIPE,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    os.rename(spot / "s", path)  # the listening socket moves with its file
    return proc


def _build(case: Case, base: Path) -> tuple[Path, list[subprocess.Popen[str]]]:
    where = base / case.name.replace(" ", "-").replace("'", "")
    where.mkdir()
    where.chmod(0o755)
    d = where / "run"
    path = d / "gateway.sock"
    if case.dir_owner is None:
        return path, []
    d.mkdir()
    procs = []
    if case.kind in ("socket", "symlink"):
        real = path if case.kind == "socket" else d / "real.sock"
        procs.append(_listen(real, case.listener))
        owner = pwd.getpwnam(case.sock_owner)
        os.chown(real, owner.pw_uid, owner.pw_gid)
        real.chmod(case.sock_mode)
        if case.kind == "symlink":
            path.symlink_to(real)
            os.lchown(path, pwd.getpwnam(USER).pw_uid, -1)
    elif case.kind == "file":
        path.write_text("not a socket")
        os.chown(path, pwd.getpwnam(USER).pw_uid, -1)
    os.chown(d, pwd.getpwnam(case.dir_owner).pw_uid, -1)
    d.chmod(case.dir_mode)
    return path, procs


def _ask(path: Path) -> dict[str, str]:
    user = pwd.getpwnam(USER)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(SRC), "FRONTDESK_SITE_CONFIG": "/nonexistent/frontdesk.toml"}
    done = subprocess.run(
        [SYSTEM_PY, "-c", PROBE, str(path)],
        user=user.pw_uid,
        group=user.pw_gid,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )
    assert done.returncode == 0, done.stderr
    answer: dict[str, str] = json.loads(done.stdout)
    return answer


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_fast_path_never_trusts_what_the_full_client_refuses(case: Case, base: Path) -> None:
    path, procs = _build(case, base)
    try:
        got = _ask(path)
    finally:
        for proc in procs:
            proc.kill()
            proc.communicate()
    assert not (got["fast"] == "trusted" and got["full"] != "trusted"), got  # the rule
    assert got == {"full": case.full, "fast": case.fast}  # and each situation is what it is meant to be
