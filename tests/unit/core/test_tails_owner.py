"""Log tails never block on a FIFO and, read by root for another user's job, only read that user's files."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from frontdesk.tails import read_tail, read_tail_lines


def test_a_fifo_named_as_the_output_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got: list[object] = []
    t = threading.Thread(target=lambda: got.extend([read_tail(fifo), read_tail_lines(fifo, 5)]), daemon=True)
    t.start()
    t.join(timeout=30)
    blocked = t.is_alive()
    if blocked:  # release it (open for writing, twice: each call may open once), so no thread outlives the test
        for _ in range(2):
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass
            t.join(1)
    assert not blocked, "read_tail blocked on a FIFO (a gateway thread would hang)"
    assert got == ["", []]


def test_a_directory_or_a_device_is_no_log(tmp_path: Path) -> None:
    assert read_tail(tmp_path) == "" and read_tail_lines("/dev/null", 3) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="the owner check applies to a root reader")
def test_root_reads_another_users_job_log_only_if_that_user_owns_it(tmp_path: Path) -> None:
    mine = tmp_path / "root-only"
    mine.write_text("root secret canary\n")
    mine.chmod(0o600)
    theirs = tmp_path / "theirs.log"
    theirs.write_text("job line\n")
    os.chown(theirs, 4242, 4242)
    link = tmp_path / "link.log"
    link.symlink_to(mine)
    os.lchown(link, 4242, 4242)
    assert read_tail(theirs, owner=4242) == "job line\n" and read_tail_lines(theirs, 5, owner=4242) == ["job line"]
    assert read_tail(mine, owner=4242) == "" and read_tail_lines(mine, 5, owner=4242) == []
    assert read_tail(link, owner=4242) == ""  # the user's symlink is followed, but the file is not theirs
    assert read_tail(mine, owner=0) == read_tail(mine) == "root secret canary\n"  # root's own job, or no owner
