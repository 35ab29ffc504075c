"""Batching and retry timing with a fake clock."""

from __future__ import annotations

from frontdesk.agents.batching import Batcher


def test_reports_ending_close_together_make_one_batch() -> None:
    b = Batcher(window=1.0, max_wait=5.0)
    b.arrived("s", 100.0)
    b.arrived("s", 100.4)
    assert b.due(101.0) == []  # still settling: due 1 s after the last report
    assert b.due(101.4) == ["s"]


def test_a_stream_of_reports_still_flushes_after_max_wait() -> None:
    b = Batcher(window=1.0, max_wait=5.0)
    for i in range(20):
        b.arrived("s", 100.0 + i * 0.5)
    assert b.next_due() == 105.0


def test_sessions_are_batched_apart() -> None:
    b = Batcher(window=1.0)
    b.arrived("a", 10.0)
    b.arrived("b", 10.5)
    assert b.due(11.0) == ["a"]
    b.done("a")
    assert b.due(11.5) == ["b"]


def test_failures_back_off_exponentially_to_a_cap() -> None:
    b = Batcher(window=1.0, retry_base=1.0, retry_max=8.0)
    b.arrived("s", 0.0)
    assert [b.failed("s", 10.0) - 10.0 for _ in range(6)] == [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
    assert b.failures("s") == 6
    b.done("s")
    assert b.failures("s") == 0 and b.next_due() is None


def test_kick_waits_for_a_settling_batch_and_parks() -> None:
    b = Batcher(window=1.0)
    assert b.kick("s", now=50.0, settle_from=49.8) == 50.8
    assert b.kick("s", now=50.0, settle_from=40.0) == 50.0
    b.park("s")
    assert b.next_due() is None
