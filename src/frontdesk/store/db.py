"""Opening the database and applying schemas, one migration list per component.

Each component (core, sessions, memory, guard, policy...) owns an ordered list of SQL migrations and
its version in `schema_versions`; `PRAGMA user_version` tracks the core's. Components register their
migrations at import time with `register_schema`; `open_db` applies every registered list.
"""

from __future__ import annotations

import sqlite3
from importlib import resources
from pathlib import Path

__all__ = ["open_db", "register_schema", "apply_schema", "SCHEMAS"]

SCHEMAS: dict[str, list[str]] = {}


def register_schema(component: str, migrations: list[str]) -> None:
    """Declare a component's migrations (append-only: never edit a released one)."""
    SCHEMAS[component] = migrations


def _core_migrations() -> list[str]:
    text = resources.files("frontdesk.store").joinpath("schema.sql").read_text()
    parts = text.split("-- migration")[1:]  # each starts with " N: title" on its first line
    return [part.partition("\n")[2].strip() for part in parts]


def apply_schema(conn: sqlite3.Connection, component: str, migrations: list[str]) -> None:
    """Apply the migrations of one component that this database has not seen yet."""
    conn.execute("CREATE TABLE IF NOT EXISTS schema_versions (component TEXT PRIMARY KEY, version INTEGER)")
    row = conn.execute("SELECT version FROM schema_versions WHERE component=?", (component,)).fetchone()
    current = row[0] if row else 0
    for number, sql in enumerate(migrations[current:], start=current + 1):
        with conn:
            conn.executescript(sql)
            conn.execute(
                "INSERT INTO schema_versions(component, version) VALUES(?, ?) "
                "ON CONFLICT(component) DO UPDATE SET version=excluded.version",
                (component, number),
            )
    if component == "core":
        conn.execute(f"PRAGMA user_version={len(migrations)}")


def open_db(path: Path) -> sqlite3.Connection:
    """Open (creating) the database in WAL mode with every registered schema applied."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    apply_schema(conn, "core", _core_migrations())
    for component, migrations in sorted(SCHEMAS.items()):
        apply_schema(conn, component, migrations)
    return conn
