"""A gateway started on a read-only state directory refuses with one line and loses nothing.

The home is a small tmpfs (root only) remounted read-only between two runs (a mounted filesystem cannot go
read-only while the gateway holds its database open for writing, so this is the moment it can happen: a start).
Before, `frontdesk serve` died with a traceback from opening its lock file.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fault_helpers import small_tmpfs, until

pytestmark = pytest.mark.slow


@pytest.fixture
def small_home() -> Iterator[Path]:
    with small_tmpfs("fd-ro-") as home:
        yield home


def test_a_read_only_home_is_refused_in_one_line_and_served_again_when_writable(
    gateway_factory: Any, small_home: Path
) -> None:
    gw = gateway_factory(env={"FRONTDESK_PLUGINS": "none"}, home=small_home)
    job = gw.client.submit(spec={"command": ["sh", "-c", "echo kept"]})["id"]
    assert gw.client.wait([job], "all", 60)["reports"][0]["state"] == "COMPLETED"
    gw.stop()
    subprocess.run(["mount", "-o", "remount,ro", str(small_home)], check=True)
    out = gw.cli("serve", timeout=60)
    assert out.returncode == 1, (out.returncode, out.stderr[-2000:])
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Read-only file system" in lines[0] and str(small_home) in lines[0], out.stderr
    subprocess.run(["mount", "-o", "remount,rw", str(small_home)], check=True)
    gw.start()
    assert gw.client.report(job)["state"] == "COMPLETED"
    assert gw.client.logs(job)["lines"] == ["kept"]
    again = gw.client.submit(spec={"command": ["true"]})["id"]
    assert gw.client.wait([again], "all", 60)["reports"][0]["state"] == "COMPLETED"


def test_a_job_ending_across_a_kill_and_a_full_disk_ends_once_when_space_returns(
    gateway_factory: Any, small_home: Path
) -> None:
    """Killed in a job's end (its report built, nothing stored); restarted on a full disk: one line, exit 1;
    started again once space is back: the job ends COMPLETED with one report, no traceback in the log."""
    from test_full_disk import _fill

    gw = gateway_factory(env={"FRONTDESK_PLUGINS": "none", "FRONTDESK_FAULT": "after_report_built:1"}, home=small_home)
    job = gw.client.submit(spec={"command": ["sh", "-c", "echo out"]})["id"]
    until(lambda: gw.proc.poll() is not None, timeout=60, what="the gateway to die in the job's end")
    ballast = _fill(small_home)
    gw.env.pop("FRONTDESK_FAULT")
    out = gw.cli("serve", timeout=60)
    assert out.returncode == 1 and len(out.stderr.strip().splitlines()) == 1, out.stderr[-2000:]
    assert "cannot start on" in out.stderr and "full" in out.stderr, out.stderr
    ballast.unlink()
    gw.start()
    done = gw.client.wait([job], "all", 60)
    assert done["done"] and [r["state"] for r in done["reports"]] == ["COMPLETED"]
    reports = [e for e in gw.client.events(since=0) if e["job_id"] == job and e["kind"] == "job.report"]
    assert len(reports) == 1 and "Traceback" not in gw.log()
