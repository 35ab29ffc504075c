"""The shepherd's side of a suspension (backends/freezing.py) on a real process, with the signal freezer (the one
that works without a cgroup) and the clock passed in: the request is followed, its end and the bound thaw, an
ended request never freezes again, a bad one is no request, an ending job is always thawed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from frontdesk.backends.freezing import SUSPEND_FILE, SUSPENDED_FILE, Freezer, Pause


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


@pytest.fixture
def job() -> Iterator[int]:
    proc = subprocess.Popen(["sleep", "60"], start_new_session=True)
    yield proc.pid
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _pause(tmp_path: Path, told: list[int]) -> Pause:
    return Pause(tmp_path, Freezer("signals", None), lambda: told.append(1), bound_s=1000.0)


def _ask(tmp_path: Path, until: object) -> None:
    (tmp_path / SUSPEND_FILE).write_text(json.dumps({"until": until, "for": "9.1"}))


def test_the_request_is_followed_and_accounted(tmp_path: Path, job: int) -> None:
    told: list[int] = []
    pause = _pause(tmp_path, told)
    tree = lambda: [job]  # noqa: E731
    pause.tick(100.0, False, job, tree)
    assert not pause.frozen and _state(job) != "T" and told == []  # no request: nothing happens
    _ask(tmp_path, 500.0)
    pause.tick(110.0, False, job, tree)
    assert pause.frozen and _state(job) == "T" and told == [1]
    account = json.loads((tmp_path / SUSPENDED_FILE).read_text())
    assert account["frozen"] is True and account["since"] == 110.0 and account["count"] == 1
    (tmp_path / SUSPEND_FILE).unlink()  # the gateway withdraws it: its trials ended
    pause.tick(150.0, False, job, tree)
    assert not pause.frozen and _state(job) != "T" and told == [1, 1]
    assert pause.suspended_s(200.0) == 40.0 and pause.result() == {"suspended_s": 40.0, "suspensions": 1}


def test_a_request_past_its_end_or_the_bound_thaws_and_never_freezes_again(tmp_path: Path, job: int) -> None:
    pause = _pause(tmp_path, [])
    tree = lambda: [job]  # noqa: E731
    _ask(tmp_path, 500.0)
    pause.tick(400.0, False, job, tree)
    assert pause.frozen
    pause.tick(500.0, False, job, tree)  # its end: thawed by the shepherd alone
    assert not pause.frozen and _state(job) != "T"
    pause.tick(450.0, False, job, tree)  # even a clock set back does not bring that request back
    assert not pause.frozen
    _ask(tmp_path, 10.0**9)  # a bad end far away: the bound still ends the suspension
    pause.tick(600.0, False, job, tree)
    assert pause.frozen
    pause.tick(1600.0, False, job, tree)
    assert not pause.frozen and pause.result()["suspensions"] == 2


def test_bad_requests_are_none_and_an_ending_job_is_thawed(tmp_path: Path, job: int) -> None:
    pause = _pause(tmp_path, [])
    tree = lambda: [job]  # noqa: E731
    for bad in ("{", json.dumps([1]), json.dumps({"until": "soon"}), json.dumps({"until": True})):
        (tmp_path / SUSPEND_FILE).write_text(bad)
        pause.tick(100.0, False, job, tree)
        assert not pause.frozen
    _ask(tmp_path, 500.0)
    pause.tick(100.0, False, job, tree)
    assert pause.frozen
    pause.tick(101.0, True, job, tree)  # cancelled: thawed first (a frozen process takes no signal)
    assert not pause.frozen and _state(job) != "T"


# -- the cgroup v2 freezer (`cgroup.freeze`) on a real cgroup2 hierarchy -------------------------------------------
# This machine's cgroups are v1 with a controller-less cgroup2 hierarchy beside them (/sys/fs/cgroup/unified;
# `mount -t cgroup2 none DIR` shows the same one): freezing needs no controller, so a child cgroup there freezes.

COUNTER = r"""
import os, sys, time
n = 0
while True:
    n += 1
    with open(sys.argv[1] + ".tmp", "w") as fh:
        fh.write(str(n))
    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
    time.sleep(0.01)
"""


def _cgroup2_root() -> Path | None:
    """A cgroup2 mount this process may make a child cgroup in, else None."""
    for line in Path("/proc/self/mounts").read_text().splitlines():
        fields = line.split()
        if len(fields) > 2 and fields[2] == "cgroup2" and os.access(fields[1], os.W_OK):
            return Path(fields[1])
    return None


def _counter(path: Path) -> subprocess.Popen[bytes]:
    import sys

    proc = subprocess.Popen([sys.executable, "-c", COUNTER, str(path)], start_new_session=True)
    _until(lambda: path.exists())
    return proc


def _until(what: Callable[[], object]) -> None:
    import time

    deadline = time.monotonic() + 30  # a hang guard, never an assertion on time
    while not what():
        assert time.monotonic() < deadline, f"{what} never held"
        time.sleep(0.01)


def _read(path: Path) -> int:
    return int(path.read_text())


@pytest.fixture
def v2_cgroup() -> Iterator[Path]:
    root = _cgroup2_root()
    if root is None or os.geteuid() != 0:
        pytest.skip("no cgroup2 hierarchy writable here (needs root and a cgroup2 mount)")
    path = root / f"frontdesk-test-{os.getpid()}"
    path.mkdir()
    yield path
    (path / "cgroup.freeze").write_text("0")
    _until(lambda: not (path / "cgroup.procs").read_text().split())
    path.rmdir()


def test_the_v2_freezer_freezes_a_job_in_its_cgroup_and_thaws_it(tmp_path: Path, v2_cgroup: Path) -> None:
    job, other = _counter(tmp_path / "job"), _counter(tmp_path / "other")
    try:
        (v2_cgroup / "cgroup.procs").write_text(str(job.pid))  # as the job's v2 (memory) cgroup join does
        freezer = Freezer.create("unused", v2_cgroup)
        assert freezer.kind == "cgroup-v2" and freezer.made is None  # the job's own cgroup: not the freezer's
        pause = Pause(tmp_path, freezer, lambda: None, bound_s=1000.0)
        tree = lambda: [job.pid]  # noqa: E731
        _ask(tmp_path, 500.0)
        pause.tick(100.0, False, job.pid, tree)
        assert pause.frozen and "frozen 1" in (v2_cgroup / "cgroup.events").read_text()
        before, start = _read(tmp_path / "job"), _read(tmp_path / "other")
        _until(lambda: _read(tmp_path / "other") >= start + 30)  # the other counter runs on 30 steps
        assert _read(tmp_path / "job") == before, "the frozen job advanced"
        (tmp_path / SUSPEND_FILE).unlink()
        pause.tick(150.0, False, job.pid, tree)
        assert not pause.frozen and "frozen 0" in (v2_cgroup / "cgroup.events").read_text()
        _until(lambda: _read(tmp_path / "job") > before)  # thawed: it counts again
        assert freezer.kind == "cgroup-v2" and pause.result() == {"suspended_s": 50.0, "suspensions": 1}
    finally:
        for proc in (job, other):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_a_v2_cgroup_gone_falls_back_to_signals(tmp_path: Path, job: int) -> None:
    freezer = Freezer("cgroup-v2", tmp_path / "gone")  # what a cgroup removed under a running shepherd leaves
    freezer.freeze(job, lambda: [job])
    assert freezer.kind == "signals" and _state(job) == "T"
    freezer.thaw(job, lambda: [job])
    assert _state(job) != "T"


def test_without_v1_the_freezer_is_signals_and_makes_no_cgroup() -> None:
    tag = f"nov1-{os.getpid()}"
    freezer = Freezer.create(tag, None, v1=False)  # a job started while suspension was off
    assert freezer.kind == "signals" and freezer.made is None
    assert not (Path("/sys/fs/cgroup/freezer/frontdesk") / tag).exists()
