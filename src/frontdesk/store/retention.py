"""The journal's retention: old events are deleted in bounded batches; events still needed never are.

An event goes when it is older than `max_age` (`audit_max_age` for the audit kinds), or, oldest first, while
the journal holds more than `max_events`. Never pruned, whatever their age: the events of a job that has not
ended or whose end is not finished (its report, its wake-ups: `report_pending`), and whatever a component
declared with `register_keep` (the agents plug-in keeps the events of sessions with unacknowledged reports).
A batch folds the events it deletes that `/metrics` counts into `tallies` (store/tallies.py) in its own
transaction, so those counters never drop.
A pass runs on its own connection (WAL: readers never wait) and deletes `batch` rows per transaction, pausing
between them, so the gateway's writers wait at most one short batch (500 rows: about 10 ms on the 2-core test
machine, where deleting costs about 16 µs a row).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from frontdesk.config import TableKeys
from frontdesk.errors import ConfigError
from frontdesk.events.models import EventKind
from frontdesk.jobs.state import UNFINISHED_STATES
from frontdesk.spec.units import parse_duration
from frontdesk.store.tallies import TALLIED_KINDS, count, fold

__all__ = ["JOURNAL_KEYS", "AUDIT_KINDS", "KEEP", "Retention", "prune", "prune_file", "register_keep"]

DAY = 86400

AUDIT_KINDS: frozenset[EventKind] = frozenset(
    {
        EventKind.ACCESS_DENIED,
        EventKind.ACCESS_ADMIN,
        EventKind.ACCESS_UNAUTHENTICATED,
        EventKind.GUARD_VERDICT,
        EventKind.POLICY_LOADED,
        EventKind.POLICY_TRIAL_REVOKED,
    }
)
"""Who was refused, who used an admin's rights, what the guard stopped, which policy ruled: kept longer."""

_LIVE_STATES = ",".join(f"'{s.value}'" for s in UNFINISHED_STATES)

KEEP: dict[str, str] = {
    "core": f"job_id IN (SELECT id FROM jobs WHERE state IN ({_LIVE_STATES}) OR report_pending != 0)",
}
"""Per component, an SQL condition over an `events` row that keeps it whatever its age."""


def register_keep(component: str, condition: str) -> None:
    """Declare events a component still needs (an SQL condition over an `events` row); registered at import."""
    KEEP[component] = condition


JOURNAL_KEYS = TableKeys.of("journal", "max_age audit_max_age max_events interval batch")


@dataclass(frozen=True)
class Retention:
    """The `[journal]` section: how long events are kept and how many at the most (0: no such limit)."""

    max_age_s: int = 30 * DAY
    audit_max_age_s: int = 365 * DAY
    max_events: int = 1_000_000
    interval_s: int = 600
    batch: int = 500
    pause_s: float = 0.05

    @classmethod
    def from_section(cls, raw: Mapping[str, object], where: str = "[journal]") -> Retention:
        """Validate a raw `[journal]` table; a bad key or value is one ConfigError line."""
        known = JOURNAL_KEYS.keys
        unknown = sorted(set(raw) - known)
        if unknown:
            raise ConfigError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(known))})")
        out = cls()
        for key, field in (("max_age", "max_age_s"), ("audit_max_age", "audit_max_age_s"), ("interval", "interval_s")):
            if key in raw:
                out = replace(out, **{field: _duration(raw[key], f"{where} {key}")})
        for key in ("max_events", "batch"):
            if key in raw:
                out = replace(out, **{key: _count(raw[key], f"{where} {key}")})
        if out.interval_s < 1 or not 1 <= out.batch <= 100_000:
            raise ConfigError(f"{where}: interval must be at least 1 s and batch 1 to 100000 rows")
        return out


def _duration(value: object, where: str) -> int:
    if not isinstance(value, str | int) or isinstance(value, bool):
        raise ConfigError(f"{where}: expected a duration such as 30d, got {value!r}")
    if value in (0, "0"):
        return 0  # no such limit
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _count(value: object, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2**62:
        raise ConfigError(f"{where}: expected a whole number of at least 0, got {value!r}")
    return value


def _kept() -> str:
    return " AND ".join(f"NOT coalesce(({cond}), 0)" for _, cond in sorted(KEEP.items()))


def _delete(conn: sqlite3.Connection, where: str, args: tuple[object, ...], after: int, limit: int) -> tuple[int, int]:
    """Delete up to `limit` events past seq `after`, folding the tallied ones into `tallies` in the same
    transaction; how many, and the last seq deleted (where the next starts)."""
    tallied = ",".join(f"'{k}'" for k in sorted(TALLIED_KINDS))
    sql = (
        f"DELETE FROM events WHERE seq IN (SELECT seq FROM events WHERE seq > ? AND {where} AND {_kept()}"
        f" ORDER BY seq LIMIT ?) RETURNING seq, kind, ts, CASE WHEN kind IN ({tallied}) THEN data END"
    )
    conn.execute("BEGIN IMMEDIATE")
    try:
        gone = conn.execute(sql, (after, *args, limit)).fetchall()
        fold(conn, count(conn, ((kind, ts, data) for _, kind, ts, data in gone if data is not None)))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return len(gone), max((row[0] for row in gone), default=after)


def _batches(
    conn: sqlite3.Connection,
    policy: Retention,
    where: tuple[str, tuple[object, ...]],
    budget: int,
    most: int,
    halt: threading.Event | None,
) -> tuple[int, int]:
    """Delete in batches (each its own transaction) until none is full, `most` rows or `budget` batches are spent,
    or `halt` is set. Each batch starts after the last one's last row: rows kept at the front are not read again."""
    deleted, used, after = 0, 0, 0
    while used < budget and deleted < most and not (halt and halt.is_set()):
        used += 1
        n, after = _delete(conn, where[0], where[1], after, min(policy.batch, most - deleted))
        deleted += n
        if n < policy.batch:
            break
        (halt or threading.Event()).wait(policy.pause_s)  # the gateway's writers go between two batches
    return deleted, used


def prune(
    conn: sqlite3.Connection,
    policy: Retention,
    now: float,
    max_batches: int = 100,
    halt: threading.Event | None = None,
) -> int:
    """One pass: delete what the policy lets go, at most `max_batches` batches and only until `halt` is set; the
    number of events deleted."""
    audit = ",".join(f"'{k.value}'" for k in sorted(AUDIT_KINDS))
    steps: list[tuple[str, tuple[object, ...]]] = []
    if policy.max_age_s:
        steps.append((f"ts < ? AND kind NOT IN ({audit})", (now - policy.max_age_s,)))
    if policy.audit_max_age_s:
        steps.append((f"ts < ? AND kind IN ({audit})", (now - policy.audit_max_age_s,)))
    deleted, budget = 0, max_batches
    for where, args in steps:
        n, used = _batches(conn, policy, (where, args), budget, 2**62, halt)
        deleted, budget = deleted + n, budget - used
    if policy.max_events:
        over = conn.execute("SELECT COUNT(*) FROM events").fetchone()[0] - policy.max_events
        if over > 0:
            deleted += _batches(conn, policy, ("1", ()), budget, over, halt)[0]
    return deleted


def prune_file(db: Path, policy: Retention, halt: threading.Event | None = None) -> int:
    """`prune` now, on a connection of its own (for a worker thread); the number of events deleted."""
    conn = sqlite3.connect(db, isolation_level=None, timeout=30)
    try:
        conn.execute("PRAGMA busy_timeout=30000")
        return prune(conn, policy, time.time(), halt=halt)
    finally:
        conn.close()
