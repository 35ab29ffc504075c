"""The squeue answers kept in files are re-rendered every snapshot: one user's 256 command lines of wide
fields were gigabytes written per snapshot. A file holds at most MAX_FILE_BYTES and a user's files together
MAX_USER_BYTES; past that the write fails (EFBIG) and the caller drops the registration (the socket answers)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from frontdesk.backends.slurm.views import MAX_FILE_BYTES, MAX_USER_BYTES, ViewFiles


def test_a_large_answer_is_not_kept(tmp_path: Path) -> None:
    views = ViewFiles(tmp_path / "v")
    reg = views.register(os.geteuid(), ["-h", "-o", "%.9000i"], None)
    assert reg is not None
    with pytest.raises(OSError) as exc:
        views.write(reg, "x" * (MAX_FILE_BYTES + 1))
    assert exc.value.errno == errno.EFBIG and not (tmp_path / "v" / reg.name).exists()
    views.write(reg, "small\n")
    assert (tmp_path / "v" / reg.name).read_text() == "small\n"


def test_one_users_files_are_bounded_together(tmp_path: Path) -> None:
    views = ViewFiles(tmp_path / "v")
    uid, written = os.geteuid(), 0
    for i in range(MAX_USER_BYTES // MAX_FILE_BYTES + 2):
        reg = views.register(uid, ["-h", "-n", f"j{i}"], None)
        assert reg is not None
        try:
            views.write(reg, "x" * MAX_FILE_BYTES)
            written += MAX_FILE_BYTES
        except OSError:
            views.drop(reg)
    assert written == MAX_USER_BYTES
    other = views.register(uid + 1, ["-h"], None)
    assert other is not None
    views.write(other, "x" * MAX_FILE_BYTES)  # another user's budget is their own
