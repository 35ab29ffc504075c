"""api/authfail.py: failed authentications are journalled with a bound (one event per source per interval)."""

from __future__ import annotations

import asyncio
import secrets

import pytest

from frontdesk.api.authfail import MAX_SOURCES, AuthFailures, token_id
from frontdesk.errors import ConfigError
from frontdesk.events.models import Event, EventKind
from frontdesk.identity import hash_token


def _scope(host: str) -> dict[str, object]:
    return {"client": (host, 40000)}


def test_a_flood_from_one_source_is_one_event_then_one_count_when_flushed() -> None:
    journal: list[Event] = []
    fails = AuthFailures(journal.append, interval=3600)
    token = secrets.token_urlsafe(24)
    for _ in range(500):
        fails.record(_scope("10.0.0.7"), {"authorization": f"Bearer {token}"})
    assert len(journal) == 1
    first = journal[0]
    assert first.kind is EventKind.ACCESS_UNAUTHENTICATED and first.principal is None
    assert first.data["source"] == "10.0.0.7" and first.data["count"] == 1
    assert first.data["token_ids"] == [hash_token(token)[7:19]] and first.data["via"] == "bearer"
    fails.flush()
    assert [e.data["count"] for e in journal] == [1, 499]
    assert token not in repr(journal)


def test_sources_are_counted_apart_and_bounded() -> None:
    journal: list[Event] = []
    fails = AuthFailures(journal.append, interval=3600)
    for i in range(MAX_SOURCES + 500):
        fails.record(_scope(f"10.{i // 65536}.{i // 256 % 256}.{i % 256}"), {})
    assert len(journal) == MAX_SOURCES + 1  # the first MAX_SOURCES addresses, then one shared bucket
    assert journal[-1].data["source"] == "*" and journal[0].data["reason"] == "no credential"
    fails.flush()
    assert journal[-1].data == {**journal[-1].data, "source": "*", "count": 499}


def test_short_values_get_no_id_and_munge_is_named() -> None:
    assert token_id("hunter2") is None
    long = "x" * 40
    assert token_id(long) == hash_token(long)[7:19]
    journal: list[Event] = []
    fails = AuthFailures(journal.append)
    fails.record(_scope("::1"), {"authorization": "Bearer hunter2"})
    fails.record(_scope("10.1.1.1"), {"authorization": "MUNGE garbage"})
    assert [(e.data["token_ids"], e.data["via"]) for e in journal] == [([], "bearer"), ([], "munge")]
    assert "hunter2" not in repr(journal)


def test_the_interval_end_journals_the_count_and_keeps_counting() -> None:
    journal: list[Event] = []

    async def flood() -> None:
        fails = AuthFailures(journal.append, interval=0.05)
        for _ in range(10):
            fails.record(_scope("10.0.0.9"), {})
        while len(journal) < 2:
            await asyncio.sleep(0.01)
        for _ in range(3):
            fails.record(_scope("10.0.0.9"), {})  # a new interval was opened by the close: counted
        while len(journal) < 3:
            await asyncio.sleep(0.01)

    asyncio.run(asyncio.wait_for(flood(), 30))
    assert [e.data["count"] for e in journal] == [1, 9, 3]


@pytest.mark.parametrize("value", [0, -1, True, "60", 100000])
def test_a_bad_interval_is_refused(value: object) -> None:
    with pytest.raises(ConfigError, match="auth_failure_interval"):
        AuthFailures.from_section({"auth_failure_interval": value}, print)
