"""A shepherd.pid whose pid now names another process (pids come round: pid_max is 32768 here): a restarted
gateway recovers the attempt as lost, and neither its recovery nor a cancel ever signals that process."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from fault_helpers import shepherd_pid, until

from frontdesk.errors import Conflict
from frontdesk.procid import ProcId, identify, parse, running
from leftovers import stop_process

pytestmark = pytest.mark.slow


def _shepherd_replaced_by(gw: Any, tmp_path: Path, stranger: subprocess.Popen[bytes]) -> tuple[int, Path]:
    """A running job whose gateway is killed (-9), then its shepherd (-9), and whose shepherd.pid then names
    `stranger` with the dead shepherd's start time and boot: what a recycled pid looks like after a restart."""
    job = gw.client.submit(spec={"command": ["/bin/sh", "-c", "exec sleep 300"]}, context={"cwd": str(tmp_path)})
    bid = gw.wait_state(job["id"], {"RUNNING"})["backend_id"]
    pidfile = gw.home / "local" / bid / "shepherd.pid"
    shepherd = shepherd_pid(gw.home, bid)
    recorded = parse(pidfile.read_text())
    assert recorded is not None and recorded.start is not None, "the shepherd records its start time"
    gw.kill9()
    os.kill(shepherd, signal.SIGKILL)
    until(lambda: not running(recorded), what="the shepherd's end")
    now = identify(stranger.pid)
    assert now is not None and now.start != recorded.start, "the stranger started after the shepherd"
    pidfile.write_text(f"{stranger.pid} {recorded.start} {recorded.boot}\n")
    return int(job["id"]), pidfile


@pytest.fixture
def stranger() -> Any:
    proc = subprocess.Popen(["sleep", "300"])
    yield proc
    stop_process(proc)


def test_restart_over_a_reused_shepherd_pid_records_the_attempt_lost(
    gateway_factory: Any, tmp_path: Path, stranger: subprocess.Popen[bytes]
) -> None:
    gw = gateway_factory(env={"FRONTDESK_PLUGINS": "none"})
    job_id, _ = _shepherd_replaced_by(gw, tmp_path, stranger)
    gw.start()
    ended = gw.wait_state(job_id, {"NODE_FAIL", "COMPLETED", "FAILED", "CANCELLED"})
    assert ended["state"] == "NODE_FAIL", ended
    assert stranger.poll() is None, "the process that reused the shepherd's pid was signalled"


def test_cancel_after_restart_never_signals_a_reused_shepherd_pid(
    gateway_factory: Any, tmp_path: Path, stranger: subprocess.Popen[bytes]
) -> None:
    gw = gateway_factory(env={"FRONTDESK_PLUGINS": "none"})
    job_id, _ = _shepherd_replaced_by(gw, tmp_path, stranger)
    gw.start()
    with contextlib.suppress(Conflict):  # already recorded lost: nothing to cancel
        gw.client.cancel(job_id)
    ended = gw.wait_state(job_id, {"NODE_FAIL", "COMPLETED", "FAILED", "CANCELLED"})
    assert ended["state"] != "RUNNING"
    assert stranger.poll() is None, "the cancel signalled the process that reused the shepherd's pid"


def test_an_older_shepherd_pid_file_holding_only_a_pid_is_still_adopted(gateway_factory: Any, tmp_path: Path) -> None:
    gw = gateway_factory(env={"FRONTDESK_PLUGINS": "none"})
    job = gw.client.submit(spec={"command": ["/bin/sh", "-c", "exec sleep 300"]}, context={"cwd": str(tmp_path)})
    bid = gw.wait_state(job["id"], {"RUNNING"})["backend_id"]
    shepherd = shepherd_pid(gw.home, bid)
    gw.kill9()
    (gw.home / "local" / bid / "shepherd.pid").write_text(f"{shepherd}\n")  # as a shepherd before procid wrote it
    gw.start()
    assert gw.client.job(job["id"])["state"] == "RUNNING", "a live shepherd from an older file is adopted"
    gw.client.cancel(job["id"])
    assert gw.wait_state(job["id"], {"CANCELLED"})["state"] == "CANCELLED"
    until(lambda: not running(ProcId(shepherd)), what="the shepherd's end (the cancel reached it)")
