"""Cancelling a pending array: milliseconds per task at two sizes, this tree beside a baseline tree.

Run: `python bench/array_cancel.py [BASELINE_SRC]` (e.g. a `git archive HEAD~N src` unpacked in /tmp). Each tree
gets its own gateway; per-task costs that grow with the array's size mean a per-task-end scan (probe 21: the
unfinished-task count made cancelling 10,000 tasks take minutes). Quote `cat /proc/loadavg` with the figures.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from frontdesk.client import Client

SIZES = (500, 3000)


def _gateway(src: str) -> tuple[subprocess.Popen[bytes], Path]:
    home = Path(tempfile.mkdtemp(prefix="fd-bc-", dir="/tmp"))
    env = {**os.environ, "FRONTDESK_HOME": str(home), "FRONTDESK_NO_AUTOSTART": "1", "PYTHONPATH": src}
    for key in ("FRONTDESK_SOCKET", "FRONTDESK_URL", "FRONTDESK_TOKEN", "FRONTDESK_CONFIG"):
        env.pop(key, None)
    log = open(home / "gateway.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "frontdesk.cli.main", "serve"], env=env, stdout=log, stderr=log)
    client = Client(socket_path=home / "run" / "gateway.sock", timeout=600)
    for _ in range(600):
        try:
            client.health()
            break
        except Exception:
            time.sleep(0.05)
    return proc, home


def _per_task_ms(home: Path, n: int) -> float:
    c = Client(socket_path=home / "run" / "gateway.sock", timeout=900)
    blocker = c.submit({"command": ["sleep", "900"]})["id"]
    array = c.submit({"command": ["true"], "array": f"0-{n - 1}", "depends_on": [blocker]})["id"]
    t = time.perf_counter()
    c.cancel(array)
    ms = (time.perf_counter() - t) * 1000 / n
    c.cancel(blocker)
    return ms


def main() -> None:
    here = str(Path(__file__).resolve().parents[1] / "src")
    trees = {"this tree": here, **({"baseline": sys.argv[1]} if len(sys.argv) > 1 else {})}
    print(f"load {open('/proc/loadavg').read().split()[:3]}")
    rows: dict[str, list[float]] = {name: [] for name in trees}
    for n in SIZES:  # interleaved: each size on every tree before the next size
        for name, src in trees.items():
            proc, home = _gateway(src)
            try:
                rows[name].append(_per_task_ms(home, n))
            finally:
                proc.terminate()
                proc.wait(30)
                shutil.rmtree(home, ignore_errors=True)
    print(f"{'tree':<10} " + " ".join(f"{n:>6} tasks" for n in SIZES) + "   growth")
    for name, ms in rows.items():
        print(f"{name:<10} " + " ".join(f"{m:>8.1f} ms" for m in ms) + f"   x{ms[-1] / ms[0]:.1f} per task")
    print(f"load {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
