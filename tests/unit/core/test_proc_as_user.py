"""proc.run(as_user=): a root process runs a command (and its start gate) as another user: their uid, gid and
supplementary groups, their cwd entered as them, the pid `started` gets is the command's, and stdin past the
gate's line is the command's (sbatch reads a root gateway's script there). Needs root and the facility users."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from frontdesk import proc
from frontdesk.backends.runas import RunAs, keyctl_number
from unix_users import ensure_user, scratch_dir


@pytest.fixture(scope="module")
def alice() -> RunAs:
    if os.geteuid() != 0:
        pytest.skip("needs root")
    return RunAs.of_uid(ensure_user("alice", ("lab1",), shell="/bin/bash").pw_uid)


def _as(who: RunAs, cwd: str) -> proc.AsUser:
    return proc.AsUser(who.uid, who.gid, who.groups, cwd, keyctl_number())


def test_the_command_runs_as_the_user_in_their_cwd_with_stdin(alice: RunAs) -> None:
    seen: list[int] = []
    with scratch_dir("fd-asuser-", 0o700) as work:
        os.chown(work, alice.uid, alice.gid)  # only alice may enter it
        code = 'echo $$ $(id -u) $(id -g) "$(id -G)" "$(pwd)"; cat'
        result = proc.run(["sh", "-c", code], started=seen.append, input="the script\n", as_user=_as(alice, str(work)))
        first, rest = result.stdout.split("\n", 1)
        pid, uid, gid, groups = first.split(" ", 3)
        assert (int(pid), int(uid), int(gid)) == (seen[0], alice.uid, alice.gid)
        groups_text, cwd = groups.rsplit(" ", 1)
        assert {int(g) for g in groups_text.split()} == set(alice.groups) and cwd == str(work)
        assert rest == "the script\n"  # stdin past the gate's line


def test_a_cwd_the_user_cannot_enter_fails_unrun(alice: RunAs, tmp_path: Path) -> None:
    mark = tmp_path / "ran"  # pytest's tmp_path is root's 0700: alice cannot enter it
    result = proc.run(["touch", str(mark)], check=False, as_user=_as(alice, str(tmp_path)))
    assert result.returncode == 126 and "cannot start" in result.stderr and not mark.exists()


_READ = r"""
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
n = int(sys.argv[1])
key = libc.syscall(n, 10, ctypes.c_long(-3), b"user", b"fdprobe-asuser-canary", 0)  # KEYCTL_SEARCH the session's
buf = ctypes.create_string_buffer(64)
print(libc.syscall(n, 11, ctypes.c_long(key), buf, 64) if key > 0 else -1, buf.value.decode())
"""


def test_the_command_does_not_possess_the_callers_session_keyring(alice: RunAs) -> None:
    import ctypes

    keyctl, add_key = keyctl_number(), {"x86_64": 248, "aarch64": 217}.get(os.uname().machine)
    if keyctl < 0 or add_key is None:
        pytest.skip("keyctl numbers known for x86_64 and aarch64 only")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    if libc.syscall(keyctl, 1, b"fdprobe-asuser-session") < 0:  # this process's own session keyring, as systemd's
        pytest.skip(f"no session keyrings here (errno {ctypes.get_errno()})")
    key = libc.syscall(add_key, b"user", b"fdprobe-asuser-canary", b"ROOTSECRET", 10, ctypes.c_long(-3))
    assert key > 0, ctypes.get_errno()
    try:
        result = proc.run(["/usr/bin/python3", "-c", _READ, str(keyctl)], as_user=_as(alice, "/"))
        assert "ROOTSECRET" not in result.stdout and result.stdout.split()[0] == "-1", result.stdout
    finally:
        libc.syscall(keyctl, 21, ctypes.c_long(key))  # KEYCTL_INVALIDATE


def test_the_gate_runs_on_an_interpreter_other_users_may_run(alice: RunAs, tmp_path: Path) -> None:
    """The gate is Python; an interpreter under root's 0700 home (pyenv, as on the CI machines) is no use to
    alice, whose exec would be refused: the gate takes one whose path is open to all (this failed in the stop-30
    review: every facility sbatch ended 'Permission denied' for the venv's interpreter)."""
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    binary = private / "python3"
    binary.write_bytes(b"#!/bin/sh\n")
    binary.chmod(0o755)
    assert not proc._open_to_all(str(binary))
    private.chmod(0o755)
    assert proc._open_to_all(str(binary)) == all(os.stat(p).st_mode & 0o001 for p in [*map(str, binary.parents)])
    gate = proc._gate_python()
    assert proc._open_to_all(gate)
    result = proc.run([gate, "-c", "import os; print(os.getuid())"], started=lambda pid: None, as_user=_as(alice, "/"))
    assert result.stdout.strip() == str(alice.uid)
