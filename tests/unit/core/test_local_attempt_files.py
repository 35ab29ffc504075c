"""The embedded backend's attempt folder (backends/local/files.py): what each set of files there means."""

from __future__ import annotations

import json
from pathlib import Path

from frontdesk.backends.base import JobState
from frontdesk.backends.gpushare import Hold
from frontdesk.backends.local.files import AttemptFiles, cancelled_result, holds_of, lost_result
from frontdesk.procid import ProcId


def _launch(files: AttemptFiles, bid: str, tmp_path: Path) -> None:
    (files.root / bid).mkdir(parents=True)
    launch = {"stdout": str(tmp_path / "out"), "stderr": str(tmp_path / "err"), "env": {}}
    files.path(bid, "launch.json").write_text(json.dumps(launch))


def test_each_set_of_files_tells_one_state(tmp_path: Path) -> None:
    files = AttemptFiles(tmp_path / "local")
    assert files.status("9.1", running=False) is None  # never launched here
    _launch(files, "9.1", tmp_path)
    waiting = files.status("9.1", running=False)
    assert waiting is not None and waiting.state is JobState.PENDING and waiting.reason == "Resources"
    running = files.status("9.1", running=True)  # spawned, its shepherd has not written started.json yet
    assert running is not None and running.state is JobState.RUNNING and running.started_at is None
    files.path("9.1", "started.json").write_text(json.dumps({"started_at": 1234.5, "pid": 99}))
    started = files.status("9.1", running=False)
    assert started is not None and started.state is JobState.RUNNING and started.started_at == 1234.5
    files.write_result("9.1", {"state": "OUT_OF_MEMORY", "exit_code": 137, "peak_rss_bytes": 2048, "ended_at": 2000.0})
    ended = files.status("9.1", running=True)
    assert ended is not None and ended.state is JobState.OUT_OF_MEMORY and ended.exit_code == 137
    assert ended.usage is not None and ended.usage.peak_rss_bytes == 2048
    assert ended.stdout_path == tmp_path / "out"


def test_results_the_gateway_writes(tmp_path: Path) -> None:
    files = AttemptFiles(tmp_path / "local")
    _launch(files, "3.2", tmp_path)
    files.write_cancelled("3.2")
    status = files.status("3.2", running=False)
    assert status is not None and status.state is JobState.CANCELLED and status.reason == "cancelled"
    assert lost_result()["state"] == JobState.NODE_FAIL and lost_result()["fenced"] is True
    assert cancelled_result()["state"] == JobState.CANCELLED


def test_unreadable_files_read_as_missing(tmp_path: Path) -> None:
    files = AttemptFiles(tmp_path / "local")
    _launch(files, "4.1", tmp_path)
    files.path("4.1", "started.json").write_text("{not json")
    files.path("4.1", "shepherd.pid").write_text("12x\n")
    assert files.read("4.1", "started.json") is None and files.shepherd_pid("4.1") is None
    files.path("4.1", "shepherd.pid").write_text("4321\n")
    assert files.shepherd_pid("4.1") == ProcId(4321)  # an older shepherd's file: a pid only


def test_holds_from_old_and_new_launch_files() -> None:
    assert holds_of({"gpu_holds": [[0, 0], [2, 4096]], "env": {}}) == (Hold(0, 0), Hold(2, 4096))
    assert holds_of({"gpu_holds": None, "env": {}}) == ()
    assert holds_of({"env": {"CUDA_VISIBLE_DEVICES": "1,3"}}) == (Hold(1), Hold(3))  # before shared GPUs
    assert holds_of({"env": {}}) == ()


def test_the_launch_file_is_read_once_per_attempt(tmp_path: Path) -> None:
    """The end of a job reads result.json alone: the output paths come from the first read of launch.json."""
    files = AttemptFiles(tmp_path / "local")
    _launch(files, "4.1", tmp_path)
    assert files.status("4.1", running=True) is not None
    files.path("4.1", "launch.json").write_text("{not json")  # were it read again, the attempt would be unknown
    files.write_result("4.1", {"state": "COMPLETED", "exit_code": 0, "ended_at": 1.0})
    ended = files.status("4.1", running=False)
    assert ended is not None and ended.state is JobState.COMPLETED and ended.stderr_path == tmp_path / "err"
    files.forget("4.1")  # over: nothing kept in memory, the files tell again
    assert files.status("4.1", running=False) is None
