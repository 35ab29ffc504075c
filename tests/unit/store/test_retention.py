"""Journal retention on a real SQLite store: what goes, what stays, in bounded batches; `[journal]` validated."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from frontdesk.errors import ConfigError
from frontdesk.events.models import Event, EventKind
from frontdesk.store.db import open_db
from frontdesk.store.jobs import JobStore
from frontdesk.store.retention import DAY, Retention, prune

NOW = 1_000 * DAY


@pytest.fixture
def store(tmp_path: Path) -> JobStore:
    return JobStore(open_db(tmp_path / "fd.db"))


def job(store: JobStore, state: str, report_pending: int = 0) -> int:
    return store.insert_job(
        spec="{}", state=state, backend="local", principal="me", submitted_at=0.0, report_pending=report_pending
    )


def event(store: JobStore, kind: EventKind, age_s: float, job_id: int | None = None) -> int:
    return store.append_event(Event(kind, data={}, job_id=job_id, ts=NOW - age_s)).seq


def seqs(store: JobStore) -> set[int]:
    return {e.seq for e in store.events_since(0)}


def test_old_events_go_unless_their_job_is_live_or_its_end_unfinished(store: JobStore) -> None:
    ended, running, ending = job(store, "COMPLETED"), job(store, "RUNNING"), job(store, "FAILED", report_pending=1)
    old_ended = event(store, EventKind.JOB_STATE, 31 * DAY, ended)
    old_free = event(store, EventKind.NODE_DRAINED, 31 * DAY)
    kept = {event(store, EventKind.JOB_SUBMITTED, 90 * DAY, j) for j in (running, ending)}
    young = event(store, EventKind.JOB_REPORT, 29 * DAY, ended)
    assert prune(store.conn, Retention(), NOW) == 2
    assert seqs(store) == kept | {young}
    assert old_ended not in seqs(store) and old_free not in seqs(store)


def test_audit_events_are_kept_for_their_own_age(store: JobStore) -> None:
    denied = event(store, EventKind.ACCESS_DENIED, 200 * DAY)
    verdict = event(store, EventKind.GUARD_VERDICT, 400 * DAY)
    warning = event(store, EventKind.JOB_WARNING, 200 * DAY)
    prune(store.conn, Retention(), NOW)
    assert seqs(store) == {denied}
    assert verdict not in seqs(store) and warning not in seqs(store)


def test_the_count_bound_drops_the_oldest_prunable_first_and_never_a_kept_one(store: JobStore) -> None:
    running = job(store, "RUNNING")
    live = [event(store, EventKind.JOB_STATE, 10, running) for _ in range(3)]
    free = [event(store, EventKind.JOB_WARNING, 5) for _ in range(6)]
    policy = Retention(max_age_s=0, audit_max_age_s=0, max_events=5)
    assert prune(store.conn, policy, NOW) == 4
    assert seqs(store) == {*live, *free[-2:]}
    assert prune(store.conn, Retention(max_age_s=0, audit_max_age_s=0, max_events=1), NOW) == 2
    assert seqs(store) == set(live)  # over the bound, but all that is left is still needed


def test_a_pass_is_bounded_and_the_next_one_carries_on(store: JobStore) -> None:
    old = [event(store, EventKind.JOB_WARNING, 40 * DAY) for _ in range(7)]
    policy = Retention(batch=2, pause_s=0)
    assert prune(store.conn, policy, NOW, max_batches=2) == 4
    assert seqs(store) == set(old[4:])
    assert prune(store.conn, policy, NOW) == 3
    assert seqs(store) == set()
    store.append_event(Event(EventKind.JOB_WARNING, data={}))
    assert store.last_seq() == old[-1] + 1  # sequence numbers are never reused: clients' cursors stay valid


def test_a_stopping_gateway_halts_a_pass_between_batches(store: JobStore) -> None:
    for _ in range(5):
        event(store, EventKind.JOB_WARNING, 40 * DAY)
    halt = threading.Event()
    halt.set()
    assert prune(store.conn, Retention(batch=2, pause_s=0), NOW, halt=halt) == 0
    assert len(seqs(store)) == 5


def test_journal_settings_are_validated() -> None:
    assert Retention.from_section({}) == Retention()
    got = Retention.from_section({"max_age": "7d", "audit_max_age": 0, "max_events": 10, "interval": "1m"})
    assert (got.max_age_s, got.audit_max_age_s, got.max_events, got.interval_s) == (7 * DAY, 0, 10, 60)
    for raw, words in [
        ({"max_ages": "1d"}, "unknown key 'max_ages'"),
        ({"max_age": "forever"}, "[journal] max_age"),
        ({"max_age": True}, "expected a duration"),
        ({"max_events": -1}, "whole number"),
        ({"max_events": "10"}, "whole number"),
        ({"interval": 0}, "at least 1"),
        ({"batch": 0}, "batch 1 to 100000"),
        ({"batch": 10**9}, "batch 1 to 100000"),
    ]:
        with pytest.raises(ConfigError, match=None) as err:
            Retention.from_section(raw)
        assert words in str(err.value), (raw, str(err.value))
