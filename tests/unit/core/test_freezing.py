"""The shepherd's side of a suspension (backends/freezing.py) on a real process, with the signal freezer (the one
that works without a cgroup) and the clock passed in: the request is followed, its end and the bound thaw, an
ended request never freezes again, a bad one is no request, an ending job is always thawed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
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
