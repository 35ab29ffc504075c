"""Opening the database and applying schemas, one migration list per component.

Each component (core, sessions, memory, guard, policy...) owns an ordered list of SQL migrations and
its version in `schema_versions`; `PRAGMA user_version` tracks the core's. Components register their
migrations at import time with `register_schema`; `open_db` applies every registered list.
"""

from __future__ import annotations

import sqlite3
from importlib import resources
from pathlib import Path

from frontdesk import faults
from frontdesk.errors import FrontdeskError

__all__ = [
    "CHECKPOINT_PAGES",
    "SCHEMAS",
    "WAL_KEPT_BYTES",
    "NewerDatabase",
    "apply_schema",
    "open_db",
    "register_schema",
]

SCHEMAS: dict[str, list[str]] = {}

CHECKPOINT_PAGES = 10_000
"""WAL pages (4 KiB) after which a commit copies the WAL into the database (SQLite's default is 1,000).

A checkpoint syncs the WAL and then the database file (two fdatasyncs; 5-13 ms each on this project's shared VM
disks) on the gateway's event loop. A submission writes ~11 pages (the row, its indexes, its event), so at 1,000
a checkpoint came every ~90 submissions: ~0.2 ms of each submission's wall time went to syncing. At 10,000 it
comes every ~900 (the WAL file stays ~40 MB). Durability is unchanged: a commit is in the WAL, which the OS
keeps through a kill -9 of the gateway (`tests/faults`); as before, only a power cut can lose the commits the
kernel had not written back yet, and the database stays consistent (synchronous=NORMAL)."""
WAL_KEPT_BYTES = 64 << 20
"""A WAL grown past this by a long reader is truncated back to it after the next checkpoint."""


class NewerDatabase(FrontdeskError):
    """The database holds a component's schema past the migrations this code knows: a newer frontdesk wrote it."""

    code = "newer_database"


def register_schema(component: str, migrations: list[str]) -> None:
    """Declare a component's migrations (append-only: never edit a released one)."""
    SCHEMAS[component] = migrations


def _core_migrations() -> list[str]:
    text = resources.files("frontdesk.store").joinpath("schema.sql").read_text()
    parts = text.split("-- migration")[1:]  # each starts with " N: title" on its first line
    return [part.partition("\n")[2].strip() for part in parts]


def apply_schema(conn: sqlite3.Connection, component: str, migrations: list[str]) -> None:
    """Apply the migrations of one component that this database has not seen yet.

    Each migration and its version number are one transaction (a crash leaves the old schema or the new one),
    run with foreign keys off, as SQLite's procedure for rebuilding a table that others reference asks (a new
    table, copy, drop the old, rename: agents/schema.py); they are on again after."""
    conn.execute("CREATE TABLE IF NOT EXISTS schema_versions (component TEXT PRIMARY KEY, version INTEGER)")
    current = _stored_version(conn, component, migrations)
    if current >= len(migrations):
        return _core_version(conn, component, migrations)
    keys = conn.execute("PRAGMA foreign_keys").fetchone()[0]
    conn.execute("PRAGMA foreign_keys=OFF")  # a no-op inside a transaction: set before BEGIN
    try:
        for number, sql in enumerate(migrations[current:], start=current + 1):
            conn.executescript("BEGIN IMMEDIATE;\n" + sql)  # the transaction stays open after the script
            conn.execute(
                "INSERT INTO schema_versions(component, version) VALUES(?, ?) "
                "ON CONFLICT(component) DO UPDATE SET version=excluded.version",
                (component, number),
            )
            faults.point("migration_uncommitted")  # the migration done, not committed: a restart redoes it
            conn.execute("COMMIT")
            faults.point("migration_committed")
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        conn.execute(f"PRAGMA foreign_keys={'ON' if keys else 'OFF'}")
    _core_version(conn, component, migrations)


def _stored_version(conn: sqlite3.Connection, component: str, migrations: list[str]) -> int:
    """The component's version in this database; NewerDatabase if past what this code knows (a downgrade)."""
    row = conn.execute("SELECT version FROM schema_versions WHERE component=?", (component,)).fetchone()
    current = int(row[0]) if row else 0
    if current > len(migrations):
        name = conn.execute("PRAGMA database_list").fetchone()[2] or "the database"
        raise NewerDatabase(
            f"{name} was written by a newer frontdesk ({component} schema {current}, this one knows "
            f"{len(migrations)}): refusing to open it; run the newer frontdesk, or restore a backup made before it"
        )
    return current


def _core_version(conn: sqlite3.Connection, component: str, migrations: list[str]) -> None:
    if component == "core":
        conn.execute(f"PRAGMA user_version={len(migrations)}")


def open_db(path: Path) -> sqlite3.Connection:
    """Open (creating) the database in WAL mode with every registered schema applied."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")  # a commit survives kill -9 (the WAL is the OS's); see CHECKPOINT_PAGES
    conn.execute(f"PRAGMA wal_autocheckpoint={CHECKPOINT_PAGES}")
    conn.execute(f"PRAGMA journal_size_limit={WAL_KEPT_BYTES}")
    conn.execute("PRAGMA foreign_keys=ON")
    components = [("core", _core_migrations()), *sorted(SCHEMAS.items())]
    try:
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name='schema_versions'").fetchone():
            for component, migrations in components:  # every one checked before any is migrated
                _stored_version(conn, component, migrations)
        for component, migrations in components:
            apply_schema(conn, component, migrations)
    except BaseException:
        conn.close()
        raise
    return conn
