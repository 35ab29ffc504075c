"""The journal's counters (store/tallies.py) on a real SQLite store: retention folds what it deletes, so the
totals `/metrics` reports are the same before and after any prune, however the batches fall."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frontdesk.events.models import Event, EventKind
from frontdesk.store.db import open_db
from frontdesk.store.jobs import JobStore
from frontdesk.store.retention import DAY, Retention, prune
from frontdesk.store.tallies import Key, totals
from frontdesk.telemetry.metrics import exposition

NOW = 1_000 * DAY

EVENTS = [
    (EventKind.SESSION_WAKE, {"channel": "tmux", "ok": True, "jobs": [1]}),
    (EventKind.SESSION_WAKE, {"channel": "tmux", "ok": False, "jobs": [1], "error": "gone"}),
    (EventKind.SESSION_WAKE, {"channel": "inbox", "ok": True, "jobs": [1, 2]}),
    (EventKind.GUARD_VERDICT, {"rule": "rm-root", "verdict": "deny"}),
    (EventKind.GUARD_VERDICT, {"rule": "fetch-exec", "verdict": "ask"}),
    (EventKind.JOB_WARNING, {"source": "memory", "text": "OOM last time"}),
    (EventKind.JOB_WARNING, {"source": "policy", "text": "not counted"}),
    (EventKind.LESSON_RECORDED, {"lesson": 1}),
    (EventKind.JOB_STATE, {"state": "COMPLETED"}),
]


def _store(path: Path) -> JobStore:
    store = JobStore(open_db(path))
    for ended_at in (NOW - 40 * DAY, NOW - 39 * DAY):  # jobs 1 and 2, ended: their events may go
        store.insert_job(
            spec="{}", state="COMPLETED", backend="local", principal="me", submitted_at=0.0, ended_at=ended_at
        )
    return store


def _add(store: JobStore, which: int, age_days: float) -> None:
    kind, data = EVENTS[which]
    store.append_event(Event(kind, data=data, job_id=None, ts=NOW - age_days * DAY))


def _counters(db: Path) -> list[str]:
    """The counter lines of the real /metrics exposition (gauges of the jobs table left out)."""
    text = exposition(db).decode()
    names = ("frontdesk_deliveries", "frontdesk_wake_latency", "frontdesk_guard_verdicts", "frontdesk_memory_")
    return [line for line in text.splitlines() if line.startswith(names)]


def _same(got: dict[Key, float], want: dict[Key, float]) -> bool:
    """Equal: counts exactly, the latency sum to float rounding (its batches add up in another order)."""
    return got.keys() == want.keys() and all(got[k] == pytest.approx(want[k], rel=1e-12) for k in want)


def _left(store: JobStore) -> int:
    return int(store.conn.execute("SELECT COUNT(*) FROM events").fetchone()[0])


def test_pruning_folds_every_tallied_event_and_metrics_stay_put(tmp_path: Path) -> None:
    store = _store(tmp_path / "fd.db")
    for which in range(len(EVENTS)):
        _add(store, which, 35)  # old: all go
        _add(store, which, 1)  # young: all stay
    before = totals(store.conn)
    shown = _counters(tmp_path / "fd.db")
    assert before[("deliveries", ("tmux", "true"))] == 2 and before[("guard_verdicts", ("rm-root", "deny"))] == 2
    assert before[("memory_hits", ())] == 2 and before[("memory_lessons", ())] == 2
    assert before[("wake_latency_count", ())] == 4  # the successful wakes with a job that ended
    assert prune(store.conn, Retention(audit_max_age_s=30 * DAY, batch=3, pause_s=0), NOW) == len(EVENTS)
    assert _left(store) == len(EVENTS)
    assert _same(totals(store.conn), before)
    assert _counters(tmp_path / "fd.db") == shown
    assert prune(store.conn, Retention(max_age_s=0, audit_max_age_s=0, max_events=0), NOW + 10 * DAY) == 0
    assert prune(store.conn, Retention(max_age_s=DAY, audit_max_age_s=DAY, pause_s=0), NOW + 10 * DAY) == len(EVENTS)
    assert _left(store) == 0 and _same(totals(store.conn), before)  # the journal is empty, the counters are not


def test_a_failed_batch_folds_nothing(tmp_path: Path) -> None:
    """The fold and the delete are one transaction: a fold that fails leaves the events where they were."""
    store = _store(tmp_path / "fd.db")
    _add(store, 0, 35)
    before = totals(store.conn)
    store.conn.execute("CREATE TRIGGER no_fold BEFORE INSERT ON tallies BEGIN SELECT RAISE(ABORT, 'full'); END")
    with pytest.raises(sqlite3.IntegrityError, match="full"):
        prune(store.conn, Retention(pause_s=0), NOW)
    assert _left(store) == 1 and totals(store.conn) == before
    assert store.conn.execute("SELECT COUNT(*) FROM tallies").fetchone()[0] == 0


@settings(max_examples=40, deadline=None)
@given(
    events=st.lists(st.tuples(st.integers(0, len(EVENTS) - 1), st.floats(0, 60)), max_size=40),
    passes=st.lists(
        st.tuples(st.integers(0, 40), st.integers(0, 20), st.integers(1, 5), st.integers(1, 3)), min_size=1, max_size=4
    ),
)
def test_totals_never_change_whatever_the_prunes(
    events: list[tuple[int, float]], passes: list[tuple[int, int, int, int]]
) -> None:
    with tempfile.TemporaryDirectory() as d:
        store = _store(Path(d) / "fd.db")
        for which, age in events:
            _add(store, which, age)
        before = totals(store.conn)
        for max_age, max_events, batch, max_batches in passes:
            age = max_age * DAY
            policy = Retention(age, age, max_events, batch=batch, pause_s=0)
            prune(store.conn, policy, NOW, max_batches)
            assert _same(totals(store.conn), before)
        store.conn.close()
