"""Test Unix users and groups: made when missing, removed once no test process uses them, never when they were
there before.

Every test that needs a real account calls `ensure_user` (a fixture's body; root only). Several pytest processes
run on one machine at once (CI shards, engineers side by side), so who made an account and who still uses it is
kept on disk, under a lock, in STATE (root's, 0700):

    STATE/user/<name>/made          this account was made by a test (absent: it was there already; never removed)
    STATE/user/<name>/<process>     a lease of a live test process (boot id, pid and start time: no reuse fools it)

`release()` (pytest_sessionfinish in tests/conftest.py, and atexit) drops this process's leases, then removes every
account a test made that no live process holds any more: the user with its home and private group (`userdel -r`),
then made groups (`groupdel`). A user that still runs processes is not removed (`userdel` refuses) and a later
session tries again; so does one left by a killed run.

Code such a user runs must be where the user can reach it: `reachable(path)` is `path` itself when every
directory above it is world-traversable, else (a clean clone under `mktemp -d`, 0700) a mirror made once per
process in a 0755 temp directory: hard links where the file system allows, copies elsewhere; removed at exit.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import grp
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["STATE", "ensure_group", "ensure_user", "reachable", "release", "scratch_dir"]

STATE = Path(os.environ.get("FRONTDESK_TEST_USERS_STATE", "/var/tmp/frontdesk-test-users"))
ROOT = Path(__file__).resolve().parents[1]
_leased: set[tuple[str, str]] = set()
_mirror: list[Path] = []
_mirrored: set[Path] = set()


def _process_key(pid: int) -> str | None:
    """`<boot id>.<pid>.<start time>` of a live process, None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None
    start = stat.rsplit(")", 1)[1].split()[19]  # field 22, counted after the command name (which may hold spaces)
    return f"{boot}.{pid}.{start}"


def _alive(lease: str) -> bool:
    pid = lease.split(".")[1] if lease.count(".") == 2 else ""
    return pid.isdigit() and _process_key(int(pid)) == lease


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    STATE.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(STATE / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _exists(kind: str, name: str) -> bool:
    try:
        (pwd.getpwnam if kind == "user" else grp.getgrnam)(name)
    except KeyError:
        return False
    return True


def _lease(kind: str, name: str, made: bool) -> None:
    d = STATE / kind / name
    d.mkdir(parents=True, exist_ok=True)
    if made:
        (d / "made").touch()
    key = _process_key(os.getpid())
    assert key is not None
    (d / key).touch()
    if not _leased:
        atexit.register(release)
    _leased.add((kind, name))


def _run(argv: list[str]) -> None:
    subprocess.run(argv, check=True, capture_output=True, timeout=60)


def _ensure_group(name: str) -> None:
    made = not _exists("group", name)
    if made:
        _run(["groupadd", "-f", name])
    _lease("group", name, made)


def ensure_group(name: str) -> int:
    """A Unix group (made when missing); its gid."""
    with _locked():
        _ensure_group(name)
    return grp.getgrnam(name).gr_gid


def ensure_user(
    name: str, groups: tuple[str, ...] = (), *, home: bool = True, shell: str = "/bin/sh"
) -> pwd.struct_passwd:
    """A Unix user (made when missing, with a home unless home=False), member of `groups` (made when missing)."""
    with _locked():
        for group in groups:
            _ensure_group(group)
        made = not _exists("user", name)
        if made:
            _run(["useradd", "-m" if home else "-M", "-s", shell, name])
        _lease("user", name, made)
        for group in groups:
            if name not in grp.getgrnam(group).gr_mem:
                _run(["usermod", "-aG", group, name])
    return pwd.getpwnam(name)


def _unused(d: Path) -> bool:
    """No live process holds `d` (stale leases, of killed runs, are dropped on the way)."""
    held = False
    for lease in d.iterdir():
        if lease.name != "made":
            if _alive(lease.name):
                held = True
            else:
                lease.unlink(missing_ok=True)
    return not held


def _remove(kind: str, d: Path) -> None:
    if not (d / "made").exists():
        if _unused(d):
            d.rmdir()
        return
    if not _unused(d):
        return
    if _exists(kind, d.name):
        argv = ["userdel", "-r", d.name] if kind == "user" else ["groupdel", d.name]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        # userdel -r exits 12 when the home was already gone: the account itself was removed
        if _exists(kind, d.name):
            err = done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"]
            print(f"unix_users: {kind} {d.name} kept: {err[0]}", file=sys.stderr)
            return
    (d / "made").unlink()
    d.rmdir()


def release() -> None:
    """Drop this process's leases; remove every test-made user, then group, that no live process holds."""
    if not _leased:
        return
    key = _process_key(os.getpid())
    with _locked():
        for kind, name in sorted(_leased):
            (STATE / kind / name / str(key)).unlink(missing_ok=True)
        _leased.clear()
        for kind in ("user", "group"):  # users first: a group that is still someone's primary cannot go
            for d in sorted((STATE / kind).glob("*")):
                _remove(kind, d)


def _traversable(path: Path) -> bool:
    return all(p.stat().st_mode & stat.S_IXOTH for p in (path, *path.parents))


def _mirror_tree(src: Path, dest: Path) -> None:
    """`src` (a directory) at `dest`: hard links (copies across file systems), no __pycache__, all 0755/0644."""
    for top, dirs, files in os.walk(src):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        at = dest / Path(top).relative_to(src)
        at.mkdir(parents=True, exist_ok=True)
        at.chmod(0o755)
        for name in files:
            if (at / name).exists() or (at / name).is_symlink():
                continue
            if os.path.islink(os.path.join(top, name)):
                os.symlink(os.readlink(os.path.join(top, name)), at / name)
                continue
            try:
                os.link(os.path.join(top, name), at / name)
            except OSError:  # another file system
                shutil.copy2(os.path.join(top, name), at / name)


def reachable(path: Path) -> Path:
    """`path` (a directory, or a file with its directory) where every user can reach it (see the module's doc)."""
    path = Path(path).resolve()
    if _traversable(path if path.is_dir() else path.parent):
        return path
    if not _mirror:
        made = Path(tempfile.mkdtemp(prefix="fd-users-", dir="/tmp"))
        made.chmod(0o755)
        _mirror.append(made)
        atexit.register(shutil.rmtree, made, True)
    rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.relative_to("/")
    tree = path if path.is_dir() else path.parent
    dest = _mirror[0] / (rel if path.is_dir() else rel.parent)
    if tree not in _mirrored:
        _mirror_tree(tree, dest)
        _mirrored.add(tree)
    for d in dest.relative_to(_mirror[0]).parents:  # the directories mkdir made on the way, whatever the umask
        (_mirror[0] / d).chmod(0o755)
    return _mirror[0] / rel


@contextlib.contextmanager
def scratch_dir(prefix: str, mode: int = 0o755) -> Iterator[Path]:
    """A fresh directory under /tmp with `mode`, removed after: pytest's tmp_path is root's and 0700, so a test
    user (a job run as its submitter) cannot enter it."""
    d = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    d.chmod(mode)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)
