"""proc.run's `stdout_file`: the command writes its output into a fresh 0600 file (never through a symlink) that
keeps what it printed after the caller is gone: how the Slurm backend keeps sbatch's job id (recovery.py)."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

import pytest

from frontdesk import proc
from frontdesk.errors import BackendError


def test_the_output_goes_into_the_file_and_comes_back(tmp_path: Path) -> None:
    record = tmp_path / "fd-1.1"
    record.write_text("stale 99\n")
    result = proc.run(["sh", "-c", "echo 4242; echo oops >&2"], stdout_file=record)
    assert (result.stdout, result.stderr) == ("4242\n", "oops\n")
    assert record.read_text() == "4242\n" and stat.S_IMODE(record.stat().st_mode) == 0o600


def test_the_file_keeps_what_was_printed_after_the_caller_dies(tmp_path: Path) -> None:
    record, go, started = tmp_path / "fd-2.1", tmp_path / "go", tmp_path / "started"
    code = (
        "import os, sys; from frontdesk import proc; "
        f"proc.run(['sh', '-c', 'touch {started}; while [ ! -e {go} ]; do sleep 0.05; done; echo 777'], "
        f"stdout_file={str(record)!r})"
    )
    caller = subprocess.Popen([sys.executable, "-c", code])
    while not started.exists():  # the caller made the file and the command runs (the file alone came first)
        assert caller.poll() is None
        subprocess.run(["sleep", "0.01"], check=True)
    caller.kill()
    caller.wait()
    go.touch()  # the command goes on without its caller, and prints
    for _ in range(400):
        if record.read_text():
            break
        subprocess.run(["sleep", "0.05"], check=True)
    assert record.read_text() == "777\n"


def test_a_symlink_in_its_place_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("keep")
    (tmp_path / "fd-3.1").symlink_to(target)
    with pytest.raises(BackendError, match="cannot keep its output"):
        proc.run(["echo", "1"], stdout_file=tmp_path / "fd-3.1")
    assert target.read_text() == "keep"
