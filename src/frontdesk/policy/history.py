"""Policy versions in the gateway's database: every distinct `[policy]` the gateway loads is kept.

The only module of `policy/` that touches storage; the plug-in calls it on the event-loop thread.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from typing import Any

from frontdesk.store.db import register_schema

__all__ = ["MIGRATIONS", "PolicyHistory"]

MIGRATIONS = [
    """
    CREATE TABLE policy_versions (
        version   INTEGER PRIMARY KEY AUTOINCREMENT,
        loaded_at REAL NOT NULL,
        source    TEXT NOT NULL,       -- the file it came from, or "rollback to N"
        digest    TEXT NOT NULL,
        config    TEXT NOT NULL        -- the raw [policy] table as JSON
    );
    CREATE TABLE policy_active (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL);
    """,
]
register_schema("policy", MIGRATIONS)


def digest(raw: dict[str, Any]) -> str:
    """A stable hash of a raw `[policy]` table."""
    return hashlib.sha256(json.dumps(raw, sort_keys=True, default=str).encode()).hexdigest()[:16]


class PolicyHistory:
    """Versions and the active pointer."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def active(self) -> dict[str, Any] | None:
        """The version in force, if any."""
        row = self.conn.execute(
            "SELECT v.* FROM policy_versions v JOIN policy_active a ON a.version = v.version"
        ).fetchone()
        return _row(row) if row else None

    def get(self, version: int) -> dict[str, Any] | None:
        """One version."""
        row = self.conn.execute("SELECT * FROM policy_versions WHERE version=?", (version,)).fetchone()
        return _row(row) if row else None

    def list(self) -> list[dict[str, Any]]:
        """Every version, oldest first, with `active` marked."""
        act = self.active()
        rows = self.conn.execute("SELECT * FROM policy_versions ORDER BY version").fetchall()
        return [{**_row(r), "active": bool(act and act["version"] == r["version"])} for r in rows]

    def record(self, raw: dict[str, Any], source: str, now: float) -> tuple[int, bool]:
        """Make `raw` the active version; a new version only when it differs from the active one."""
        d = digest(raw)
        act = self.active()
        if act and act["digest"] == d:
            return int(act["version"]), False
        # A savepoint, not `with conn:` (which commits whatever transaction is open, a job's end included):
        # alone it is a transaction of its own; inside another one it commits with it.
        self.conn.execute("SAVEPOINT policy_record")
        try:
            cur = self.conn.execute(
                "INSERT INTO policy_versions(loaded_at, source, digest, config) VALUES(?,?,?,?)",
                (now, source, d, json.dumps(raw, sort_keys=True, default=str)),
            )
            version = int(cur.lastrowid or 0)
            self.conn.execute(
                "INSERT INTO policy_active(id, version) VALUES(1, ?) "
                "ON CONFLICT(id) DO UPDATE SET version=excluded.version",
                (version,),
            )
        except BaseException:
            self.conn.execute("ROLLBACK TO policy_record")
            self.conn.execute("RELEASE policy_record")
            raise
        self.conn.execute("RELEASE policy_record")
        return version, True


def _row(row: sqlite3.Row) -> dict[str, Any]:
    return {
        "version": row["version"],
        "loaded_at": row["loaded_at"],
        "source": row["source"],
        "digest": row["digest"],
        "config": json.loads(row["config"]),
    }
