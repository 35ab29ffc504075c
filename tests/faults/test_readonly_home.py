"""A gateway started on a read-only state directory refuses with one line and loses nothing.

The home is a small tmpfs (root only) remounted read-only between two runs (a mounted filesystem cannot go
read-only while the gateway holds its database open for writing, so this is the moment it can happen: a start).
Before, `frontdesk serve` died with a traceback from opening its lock file.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow


@pytest.fixture
def small_home() -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    home = Path(tempfile.mkdtemp(prefix="fd-ro-", dir="/tmp"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m,mode=0700", "tmpfs", str(home)], check=True)
    try:
        yield home
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(home)], check=False)
        subprocess.run(["umount", "-l", str(home)], check=False)
        os.rmdir(home)


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
