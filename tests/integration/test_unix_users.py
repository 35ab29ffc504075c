"""tests/unix_users.py with real accounts: a test-made user goes when the last process holding it releases it (with
its home and groups), one that was there before stays, a killed holder's lease does not keep it, and a user still
running processes is kept with one line and removed by a later session.

Each holder is a separate Python process (as concurrent pytest sessions are) sharing a private state directory."""

from __future__ import annotations

import grp
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
HOLDER = """
import sys
sys.path.insert(0, sys.argv[1])
import unix_users
print("ready", flush=True)
for line in sys.stdin:
    verb, *rest = line.split()
    if verb == "user":
        unix_users.ensure_user(rest[0], ("g" + rest[0],))
    elif verb == "release":
        unix_users.release()
    print("ok", flush=True)
"""

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("useradd") is None, reason="makes Unix users (root, useradd)"
)


def _exists(name: str, db: str = "user") -> bool:
    try:
        (pwd.getpwnam if db == "user" else grp.getgrnam)(name)
    except KeyError:
        return False
    return True


def _runs_as(uid: int) -> bool:
    for p in Path("/proc").iterdir():
        try:
            if p.name.isdigit() and p.stat().st_uid == uid:
                return True
        except FileNotFoundError:
            pass
    return False


class Holder:
    """A process that uses tests/unix_users.py, driven line by line."""

    def __init__(self, state: Path) -> None:
        env = {**os.environ, "FRONTDESK_TEST_USERS_STATE": str(state)}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(TESTS)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.ask("") == "ready"

    def ask(self, line: str) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        if line:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    def end(self) -> str:
        """Close stdin and wait; its stderr."""
        _, err = self.proc.communicate(timeout=60)
        return err


@pytest.fixture
def names(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A private state directory and a fresh user name; whatever the test left is removed afterwards."""
    name = "fdtu" + secrets.token_hex(3)
    yield tmp_path / "state", name
    for user in (name, name + "x"):
        for argv in (["userdel", "-r", user], ["groupdel", "g" + user], ["groupdel", user]):
            subprocess.run(argv, capture_output=True)


def test_the_last_holder_removes_a_user_a_test_made_with_its_home_and_groups(names: tuple[Path, str]) -> None:
    state, name = names
    first, second = Holder(state), Holder(state)
    assert first.ask(f"user {name}") == "ok"
    home = Path(pwd.getpwnam(name).pw_dir)
    assert home.is_dir() and _exists("g" + name, "group")
    assert second.ask(f"user {name}") == "ok"  # there already: the second process holds it too
    assert first.ask("release") == "ok"
    assert _exists(name), "removed while another process still used it"
    assert second.ask("release") == "ok"
    assert not _exists(name) and not home.exists()
    assert not _exists(name, "group") and not _exists("g" + name, "group")
    assert first.end() == second.end() == ""


def test_a_user_that_was_there_before_is_left_alone(names: tuple[Path, str]) -> None:
    state, name = names
    subprocess.run(["useradd", "-M", "-s", "/bin/sh", name], check=True, capture_output=True)
    holder = Holder(state)
    assert holder.ask(f"user {name}") == "ok"
    assert holder.ask("release") == "ok"
    assert _exists(name)
    assert not _exists("g" + name, "group")  # the group it was given was made by the test: gone
    assert holder.end() == ""


def test_a_killed_holder_does_not_keep_a_user(names: tuple[Path, str]) -> None:
    state, name = names
    killed, later = Holder(state), Holder(state)
    assert killed.ask(f"user {name}") == "ok"
    killed.proc.send_signal(signal.SIGKILL)
    killed.end()
    assert later.ask(f"user {name}x") == "ok"
    assert later.ask("release") == "ok"
    assert not _exists(name) and not _exists(name + "x")
    later.end()


def test_a_user_still_running_a_process_is_kept_then_removed_by_a_later_session(names: tuple[Path, str]) -> None:
    state, name = names
    holder = Holder(state)
    assert holder.ask(f"user {name}") == "ok"
    sleeper = subprocess.Popen(["runuser", "-u", name, "--", "sleep", "60"], start_new_session=True)
    try:
        # runuser has forked `sleep` as the user once the user's process shows in /proc
        uid = pwd.getpwnam(name).pw_uid
        while not _runs_as(uid):
            assert sleeper.poll() is None
            time.sleep(0.01)
        assert holder.ask("release") == "ok"
        assert _exists(name)
    finally:
        os.killpg(sleeper.pid, signal.SIGKILL)
        sleeper.wait()
    assert holder.end().startswith(f"unix_users: user {name} kept: userdel: user {name} is currently used by process")
    later = Holder(state)
    assert later.ask(f"user {name}") == "ok"
    assert later.ask("release") == "ok"
    assert not _exists(name)
    later.end()


def test_code_under_a_private_directory_is_reachable_by_a_user(tmp_path: Path) -> None:
    """A checkout under a 0700 directory (a clean clone in `mktemp -d`): the user runs a mirror of it."""
    from unix_users import ensure_user, reachable

    user = ensure_user("fdtureach", home=False).pw_name
    private = tmp_path / "clone" / "pkg"
    private.mkdir(parents=True)
    (private / "mod.py").write_text("print('from the mirror')\n")
    tmp_path.chmod(0o700)

    def run(path: Path) -> subprocess.CompletedProcess[str]:
        argv = ["runuser", "-u", user, "--", "/usr/bin/python3", str(path)]
        return subprocess.run(argv, capture_output=True, text=True, cwd="/", timeout=60)

    assert "Permission denied" in run(private / "mod.py").stderr
    mirrored = reachable(private / "mod.py")
    assert mirrored != private / "mod.py" and run(mirrored).stdout == "from the mirror\n"
    assert reachable(Path("/usr/lib")) == Path("/usr/lib")  # reachable already: itself
