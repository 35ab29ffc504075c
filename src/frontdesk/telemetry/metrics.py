"""Prometheus metrics of a gateway, computed from its store (jobs table and event journal) at each scrape.

Read from the journal rather than counted in memory, so the figures survive restarts and need no hook in
the gateway; the counters add what journal retention folded away before deleting it (store/tallies.py), so
they never drop after a prune. Names are prefixed `frontdesk_`. The cost is one pass over the journal per
scrape (indexed by kind), fine for a scrape every 15-60 s on a journal of up to a few million events.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric, SummaryMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry

from frontdesk.jobs.state import JobState
from frontdesk.store.tallies import totals

__all__ = ["CONTENT_TYPE", "JournalCollector", "ShieldCounters", "exposition"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_PENDING = JobState.PENDING.value


@dataclass(frozen=True)
class ShieldCounters:
    """The Slurm polling shield's counters since the gateway started (in memory, not journalled)."""

    answers: int
    """squeue/sacct calls the shims answered from the shared view (each a real squeue: two controller RPCs)."""
    controller_queries: int
    """Queries the gateway itself sent to the controller (its batched view refreshes)."""


class JournalCollector(Collector):
    """Yields the gateway's metrics from a read-only connection to its database."""

    def __init__(self, db: sqlite3.Connection, shield: ShieldCounters | None = None) -> None:
        self.db = db
        self.shield = shield

    def collect(self) -> Iterator[Metric]:
        """Every metric family, freshly read."""
        yield from self._jobs()
        yield from self._tallied()
        if self.shield is not None:
            yield from self._shield(self.shield)

    def _shield(self, shield: ShieldCounters) -> Iterator[Metric]:
        answers = CounterMetricFamily(
            "frontdesk_shield_answers",
            "Scheduler queries the shims answered from cache over the socket (reads of view files are not seen)",
        )
        answers.add_metric([], shield.answers)
        saved = CounterMetricFamily(
            "frontdesk_controller_rpcs_saved", "Controller RPCs the shield's answers spared (two per squeue)"
        )
        saved.add_metric([], 2 * shield.answers)
        sent = CounterMetricFamily("frontdesk_controller_queries", "Queries the gateway sent to the controller")
        sent.add_metric([], shield.controller_queries)
        yield from (answers, saved, sent)

    def _jobs(self) -> Iterator[Metric]:
        depth = GaugeMetricFamily("frontdesk_queue_depth", "Jobs waiting (PENDING) per class", labels=["job_class"])
        states = GaugeMetricFamily("frontdesk_jobs", "Jobs in the store per state", labels=["state"])
        wait = SummaryMetricFamily(
            "frontdesk_queue_wait_seconds", "Submit to start of started jobs, per class", labels=["job_class"]
        )
        rows = self.db.execute("SELECT state, COALESCE(job_class, ''), COUNT(*) FROM jobs GROUP BY 1, 2")
        per_state: dict[str, int] = {}
        for state, job_class, n in rows:
            per_state[state] = per_state.get(state, 0) + n
            if state == _PENDING:
                depth.add_metric([job_class], n)
        for state, n in sorted(per_state.items()):
            states.add_metric([state], n)
        rows = self.db.execute(
            "SELECT COALESCE(job_class, ''), COUNT(*), SUM(started_at - submitted_at) FROM jobs "
            "WHERE started_at IS NOT NULL GROUP BY 1"
        )
        for job_class, n, total in rows:
            wait.add_metric([job_class], n, max(0.0, float(total or 0.0)))
        yield from (depth, states, wait)

    def _tallied(self) -> Iterator[Metric]:
        """The journal's counters: the events still in it plus those retention folded away (store/tallies.py)."""
        got = totals(self.db)
        sent = CounterMetricFamily(
            "frontdesk_deliveries", "Session wake-ups per channel and outcome", labels=["channel", "ok"]
        )
        verdicts = CounterMetricFamily(
            "frontdesk_guard_verdicts", "Guard verdicts journalled per rule and verdict", labels=["rule", "verdict"]
        )
        for (name, labels), value in sorted(got.items()):
            if name == "deliveries":
                sent.add_metric(list(labels), value)
            elif name == "guard_verdicts":
                verdicts.add_metric(list(labels), value)
        latency = SummaryMetricFamily("frontdesk_wake_latency_seconds", "Last job end to its successful wake-up")
        latency.add_metric([], int(got.get(("wake_latency_count", ()), 0)), got.get(("wake_latency_sum", ()), 0.0))
        hits = CounterMetricFamily("frontdesk_memory_hits", "Submissions warned by the failure memory")
        hits.add_metric([], got.get(("memory_hits", ()), 0))
        lessons = CounterMetricFamily("frontdesk_memory_lessons", "Lessons recorded by the failure memory")
        lessons.add_metric([], got.get(("memory_lessons", ()), 0))
        yield from (sent, latency, verdicts, hits, lessons)


def exposition(db_path: Path, shield: ShieldCounters | None = None) -> bytes:
    """The Prometheus text exposition of the gateway whose database is `db_path`."""
    from prometheus_client import generate_latest

    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=5)
    try:
        db.execute("BEGIN")  # one snapshot: a pruning batch that commits meanwhile is seen whole or not at all
        registry = CollectorRegistry(auto_describe=False)
        registry.register(JournalCollector(db, shield))
        return generate_latest(registry)
    finally:
        db.close()
