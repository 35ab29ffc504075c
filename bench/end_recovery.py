"""How long a restart takes to finish job ends a crash cut short (issue 12 item 1), beside a plain restart.

Runs N short jobs on a real gateway, stops it, then marks every job's end as cut short right after its state was
stored (report and terminal events gone, report_pending=1: what FRONTDESK_FAULT=after_state_stored leaves),
and times the restart until every report is back; then the same restart with nothing to finish.
Usage: python bench/end_recovery.py [N]
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from conftest import GatewayProc, _short_home  # noqa: E402


def main(n: int) -> None:
    os.environ["FRONTDESK_PLUGINS"] = "none"
    gw = GatewayProc(_short_home()).start()
    ids = [gw.client.submit(spec={"command": ["true"]}, context={"cwd": "/tmp"})["id"] for _ in range(n)]
    assert gw.client.wait(ids, "all", 600)["done"]
    gw.stop()
    db = sqlite3.connect(gw.home / "frontdesk.db")
    with db:
        db.execute("UPDATE jobs SET report=NULL, report_pending=1")
        db.execute(
            "DELETE FROM events WHERE kind='job.report' OR (kind='job.state' AND data LIKE '%\"previous\": null%')"
        )
    db.close()
    t0 = time.monotonic()
    gw.start()
    assert gw.client.wait(ids, "all", 600)["done"]
    cut_short = time.monotonic() - t0
    gw.stop()
    t0 = time.monotonic()
    gw.start()
    assert gw.client.wait(ids, "all", 600)["done"]
    plain = time.monotonic() - t0
    gw.stop()
    print(f"jobs: {n}")
    print(f"restart finishing {n} cut-short ends: {cut_short:.2f} s ({cut_short / n * 1000:.1f} ms a job)")
    print(f"plain restart, nothing to finish:   {plain:.2f} s")
    print(f"ratio: {cut_short / plain:.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
