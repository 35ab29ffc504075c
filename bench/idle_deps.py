"""Idle cost of wide dependencies: gateway CPU while five jobs with 1,000 `depends_on` entries each wait.

Run: .venv/bin/python bench/idle_deps.py [--seconds 20]
Side by side in one run: the same gateway idle with no waiting jobs, then with the five wide jobs waiting on
1,000 held jobs (the largest `depends_on` a spec may have). Prints CPU seconds per wall second of each phase.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from frontdesk.demo import start_gateway  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def busy(pid: int, seconds: float) -> float:
    start, t = cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    return (cpu_seconds(pid) - start) / (time.monotonic() - t)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seconds", type=float, default=20.0)
    args = ap.parse_args()
    home = Path(tempfile.mkdtemp(prefix="fd-deps-", dir="/tmp"))
    proc, client = start_gateway(home, extra_env={"FRONTDESK_PLUGINS": "none"})
    try:
        gate = home / "gate"
        hold = client.submit(spec={"command": ["/bin/sh", "-c", f"while [ ! -e {gate} ]; do sleep 1; done"]})["id"]
        held = [client.submit(spec={"command": ["true"], "depends_on": [hold]})["id"] for _ in range(1000)]
        time.sleep(3)
        idle = busy(proc.pid, args.seconds)
        for _ in range(5):
            client.submit(spec={"command": ["true"], "depends_on": held})
        time.sleep(3)
        wide = busy(proc.pid, args.seconds)
        print(f"gateway CPU, 1,001 jobs waiting:            {idle * 100:.1f} % of a core")
        ratio = wide / max(idle, 1e-3)
        print(f"  plus five jobs with 1,000 depends_on each: {wide * 100:.1f} % of a core  (x{ratio:.1f})")
        gate.touch()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
