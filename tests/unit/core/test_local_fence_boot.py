"""A lost attempt's fence (backends/local/lost.py) kills its process group only when started.json names a
group of this boot: after a reboot the same pid and start ticks may be another process's."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from frontdesk.backends.local.files import AttemptFiles
from frontdesk.backends.local.lost import fence_attempt
from frontdesk.procid import boot_id, identify
from leftovers import stop_process


@pytest.fixture
def group_leader() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(["sleep", "300"], start_new_session=True)  # its own process group, as a job's
    yield proc
    stop_process(proc)


def _attempt(tmp_path: Path, leader: subprocess.Popen[bytes], boot: str | None) -> AttemptFiles:
    files = AttemptFiles(tmp_path / "local")
    (files.root / "5.1").mkdir(parents=True)
    files.path("5.1", "launch.json").write_text(json.dumps({"env": {}}))
    me = identify(leader.pid)
    assert me is not None
    started = {"pid": leader.pid, "pid_start": me.start, "started_at": 1.0}
    files.path("5.1", "started.json").write_text(json.dumps(started if boot is None else {**started, "pid_boot": boot}))
    return files


def test_a_group_recorded_in_an_earlier_boot_is_never_signalled(
    tmp_path: Path, group_leader: subprocess.Popen[bytes]
) -> None:
    files = _attempt(tmp_path, group_leader, "00000000-0000-0000-0000-000000000000")
    assert fence_attempt(files, "5.1", timeout=5)
    assert group_leader.poll() is None, "a process group of this boot was killed for one of an earlier boot"


@pytest.mark.parametrize("boot", ["this", None], ids=["this-boot", "older-record-without-boot"])
def test_a_group_of_this_boot_is_fenced(
    tmp_path: Path, group_leader: subprocess.Popen[bytes], boot: str | None
) -> None:
    files = _attempt(tmp_path, group_leader, boot_id() if boot == "this" else None)
    assert fence_attempt(files, "5.1", timeout=5)
    assert group_leader.wait(timeout=30) == -9
