"""proc.run's `started(pid)`: called before the command runs, with the pid the command then runs under; the command
never runs when `started` fails or when the caller dies before it returned (how the Slurm backend records sbatch's
process before it can submit anything: backends/slurm/launches.py). Canaries: files touched in a temporary folder."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from frontdesk import proc
from frontdesk.errors import BackendError


def test_started_gets_the_pid_the_command_runs_under(tmp_path: Path) -> None:
    seen: list[int] = []
    mark = tmp_path / "ran"

    def started(pid: int) -> None:
        assert not mark.exists()  # the command has not run yet
        seen.append(pid)

    result = proc.run(["sh", "-c", f"touch '{mark}'; echo $$"], started=started)
    assert mark.exists() and result.stdout.split() == [str(seen[0])]


def test_the_command_never_runs_when_started_fails(tmp_path: Path) -> None:
    mark = tmp_path / "ran"

    def started(pid: int) -> None:
        raise OSError("disk full")

    with pytest.raises(OSError):
        proc.run(["touch", str(mark)], started=started)  # killed and reaped before it returns
    assert not mark.exists()


def test_the_command_never_runs_when_the_caller_dies_in_started(tmp_path: Path) -> None:
    mark, pid_file = tmp_path / "ran", tmp_path / "pid"
    code = (
        "import os, signal; from frontdesk import proc\n"
        "def started(pid):\n"
        f"    open({str(pid_file)!r}, 'w').write(str(pid))\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        f"proc.run(['touch', {str(mark)!r}], started=started)\n"
    )
    caller = subprocess.run([sys.executable, "-c", code], timeout=60)
    assert caller.returncode == -9
    pid = int(pid_file.read_text())
    for _ in range(600):  # the gate reads EOF once its caller is gone and exits without running the command
        if not _alive(pid):
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the gated command is still waiting after its caller died")
    assert not mark.exists()


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_missing_command_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(BackendError, match="command not found: no-such-sbatch-here"):
        proc.run(["no-such-sbatch-here"], started=lambda pid: None)
