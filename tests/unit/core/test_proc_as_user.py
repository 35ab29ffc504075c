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
