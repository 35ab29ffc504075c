"""The SQLite file of `frontdesk observe`: one row per attributed process, one per run."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from frontdesk.telemetry.sampler import ProcessRecord, SamplerStats

__all__ = ["ObserveStore", "SCHEMA"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS processes (
    host TEXT NOT NULL, pid INTEGER NOT NULL, start_time REAL NOT NULL, ppid INTEGER NOT NULL,
    seen_at REAL NOT NULL, uid INTEGER NOT NULL, tty INTEGER NOT NULL, comm TEXT NOT NULL,
    argv TEXT NOT NULL, cwd TEXT, ancestry TEXT NOT NULL, actor TEXT NOT NULL, harness TEXT,
    classes TEXT NOT NULL,
    PRIMARY KEY (host, pid, start_time)
);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY, host TEXT NOT NULL, started REAL NOT NULL, ended REAL, hz REAL NOT NULL,
    ticks INTEGER NOT NULL DEFAULT 0, recorded INTEGER NOT NULL DEFAULT 0, excluded INTEGER NOT NULL DEFAULT 0,
    cpu_s REAL NOT NULL DEFAULT 0
);
"""


class ObserveStore:
    """Writes and reads an observe database (created on open; `PRAGMA user_version` 1)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        if not path.exists():  # it holds every user's commands (redacted): readable by its owner only
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
        self.db = sqlite3.connect(path)
        self.db.executescript(SCHEMA)
        self.db.execute("PRAGMA user_version = 1")

    def start_run(self, host: str, started: float, hz: float) -> int:
        """A new run's id."""
        cur = self.db.execute("INSERT INTO runs (host, started, hz) VALUES (?, ?, ?)", (host, started, hz))
        self.db.commit()
        return int(cur.lastrowid or 0)

    def add(self, records: Iterable[ProcessRecord]) -> int:
        """Store processes (a process already stored is kept as it was); returns how many were new."""
        rows = [
            (
                r.host, r.pid, r.start_time, r.ppid, r.seen_at, r.uid, r.tty, r.comm, r.argv, r.cwd,
                json.dumps(list(r.ancestry)), r.actor.value, r.harness.value if r.harness else None,
                ",".join(c.value for c in r.classes),
            )
            for r in records
        ]  # fmt: skip
        before = self.db.total_changes
        self.db.executemany(f"INSERT OR IGNORE INTO processes VALUES ({','.join('?' * 14)})", rows)
        self.db.commit()
        return self.db.total_changes - before

    def end_run(self, run: int, ended: float, stats: SamplerStats, cpu_s: float) -> None:
        """Record a run's end and counters."""
        self.db.execute(
            "UPDATE runs SET ended=?, ticks=?, recorded=?, excluded=?, cpu_s=? WHERE id=?",
            (ended, stats.ticks, stats.recorded, stats.excluded, cpu_s, run),
        )
        self.db.commit()

    def close(self) -> None:
        """Close the file."""
        self.db.close()
