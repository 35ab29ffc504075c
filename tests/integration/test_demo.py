"""The README's first command: `frontdesk demo` runs a real campaign and prints every report."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def test_demo_campaign_ends_as_expected() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FRONTDESK_")}
    r = subprocess.run(
        [sys.executable, "-m", "frontdesk.cli.main", "demo", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    reports = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    states = {rep["name"]: rep["state"] for rep in reports}
    assert states == {
        "prepare": "COMPLETED",
        "train": "COMPLETED",
        "big-batch": "OUT_OF_MEMORY",
        "long-sweep": "TIMEOUT",
        "flaky-eval": "COMPLETED",
    }
    by_name = {rep["name"]: rep for rep in reports}
    assert by_name["flaky-eval"]["attempts"] == 2
    assert by_name["big-batch"]["classification"]["kind"] == "host_oom"
    assert "end states" in r.stdout
