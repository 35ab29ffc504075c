"""Journal retention against a real gateway: old events go in the background, needed ones stay, restarts work.

The jobs whose events must stay are submitted FIRST, so their events are older than those of the job whose
events are seen to go: when the younger ones are gone, the older kept ones were kept by rule, not by luck.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from serve_helpers import serve_refused

CONFIG = '[journal]\nmax_age = "4s"\naudit_max_age = "4s"\ninterval = "1s"\n[agents]\nbatch_window_s = 0.5\n'


def journal(home: Path, job: int | None = None) -> list[tuple[int, str, int | None, str | None]]:
    """The stored events (seq, kind, job, session), read from the database the gateway writes."""
    with sqlite3.connect(f"file:{home / 'frontdesk.db'}?mode=ro", uri=True) as db:
        rows = db.execute("SELECT seq, kind, job_id, session FROM events ORDER BY seq").fetchall()
    return [r for r in rows if job is None or r[2] == job]


def until(what: str, check: Callable[[], bool], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"still not: {what}")
        time.sleep(0.2)


def run(gw: Any, *argv: str, env: dict[str, str] | None = None) -> int:
    res = gw.cli("run", "--json", "--", *argv, env=env)
    assert res.returncode == 0, res.stderr
    return int(json.loads(res.stdout)["id"])


def test_old_events_are_pruned_and_pending_ones_kept_across_a_restart(gateway_factory: Any) -> None:
    gw = gateway_factory(config=CONFIG)
    live = run(gw, "sleep", "300")
    sid = str(uuid.uuid4())
    unread = run(gw, "echo", "unread-report", env={"CLAUDE_CODE_SESSION_ID": sid, "CLAUDECODE": "1"})
    gw.wait_state(live, {"RUNNING"})
    gw.wait_state(unread, {"COMPLETED"})
    until("the session holds the report unread", lambda: gw.client.request("GET", f"/v1/sessions/{sid}")["unread"])
    done = run(gw, "true")
    gw.wait_state(done, {"COMPLETED"})
    until("the ended job's events are in the journal", lambda: len(journal(gw.home, done)) >= 3)
    kept_live, kept_unread = journal(gw.home, live), journal(gw.home, unread)
    assert kept_live and kept_unread and all(r[3] == sid for r in kept_unread)

    until("the ended job's events are pruned", lambda: journal(gw.home, done) == [])
    now = set(journal(gw.home))
    assert set(kept_live) <= now  # a running job's events, older than the ones just pruned
    assert set(kept_unread) <= now  # a session's, while a report is unread

    assert gw.client.request("POST", f"/v1/sessions/{sid}/ack", {"jobs": [unread]})["acked"]
    until("an acknowledged session's events are pruned", lambda: not [r for r in journal(gw.home) if r[3] == sid])
    assert set(kept_live) <= set(journal(gw.home))

    # the store stays whole: every job, its report and its status are still there
    with sqlite3.connect(f"file:{gw.home / 'frontdesk.db'}?mode=ro", uri=True) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("SELECT COUNT(*) FROM jobs").fetchone()[0] == 3
    report = gw.cli("report", str(done), "--json")
    assert report.returncode == 0 and json.loads(report.stdout)["state"] == "COMPLETED", report.stderr

    highest = max(r[0] for r in now)
    gw.restart()
    assert gw.client.job(live)["state"] == "RUNNING"
    assert set(kept_live) <= set(journal(gw.home))
    after = run(gw, "true")
    gw.wait_state(after, {"COMPLETED"})
    assert min(r[0] for r in journal(gw.home, after)) > highest  # sequence numbers are never reused
    assert gw.cli("cancel", str(live)).returncode == 0
    gw.wait_state(live, {"CANCELLED"})
    until("an ended job's old events are pruned after its end", lambda: journal(gw.home, live) == [])
    assert "journal: a pruning pass failed" not in gw.log()


def test_the_count_bound_keeps_the_journal_small(gateway_factory: Any) -> None:
    gw = gateway_factory(config='[journal]\nmax_age = 0\naudit_max_age = 0\nmax_events = 4\ninterval = "1s"\n')
    live = run(gw, "sleep", "300")
    gw.wait_state(live, {"RUNNING"})
    ids = [run(gw, "true") for _ in range(4)]
    for job in ids:
        gw.wait_state(job, {"COMPLETED"})
    kept = journal(gw.home, live)
    until("the journal is cut to the bound", lambda: len(journal(gw.home)) <= max(4, len(kept)))
    rows = journal(gw.home)
    assert set(kept) <= set(rows)
    assert journal(gw.home, ids[0]) == []  # the oldest that may go, went first
    assert ("job.report", ids[-1]) in {(r[1], r[2]) for r in rows}  # the newest stayed
    gw.cli("cancel", str(live))


def test_a_bad_journal_setting_stops_the_start_with_one_line(tmp_path: Path) -> None:
    home = Path(tmp_path)
    res = serve_refused(home, '[journal]\nmax_age = "soon"\n')
    assert res.returncode == 2  # ConfigError: a user error
    assert "[journal] max_age" in res.stderr and "Traceback" not in res.stderr, res.stderr


def _counters(gw: Any) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """The counter samples of a real /metrics scrape (Prometheus's own parser), by name and labels."""
    import httpx
    from prometheus_client.parser import text_string_to_metric_families

    with httpx.Client(transport=httpx.HTTPTransport(uds=str(gw.socket)), timeout=30) as http:
        res = http.get("http://gateway/metrics")
    assert res.status_code == 200, res.text
    out = {}
    for family in text_string_to_metric_families(res.text):
        if family.type in ("counter", "summary"):
            for s in family.samples:
                out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_metrics_counters_do_not_drop_when_their_events_are_pruned(gateway_factory: Any, tmp_path: Path) -> None:
    """Events counted, scraped, then pruned (a restart under a short retention): the same counters after."""
    gw = gateway_factory(config='[journal]\nmax_age = "30d"\n[agents]\nbatch_window_s = 0.5\n')
    sid = str(uuid.uuid4())
    woken = run(gw, "echo", "for-the-session", env={"CLAUDE_CODE_SESSION_ID": sid, "CLAUDECODE": "1"})
    gw.wait_state(woken, {"COMPLETED"})
    for _ in range(2):  # checked, never run: the guard journals its verdict in this gateway
        denied = gw.cli("guard", "check", "--json", "--", "rm", "-rf", "/", cwd=tmp_path)
        assert denied.returncode == 2, denied.stdout + denied.stderr
    counted = {"session.wake", "guard.verdict"}
    kinds = lambda: {r[1] for r in journal(gw.home)}  # noqa: E731
    until("the session holds the report", lambda: gw.client.request("GET", f"/v1/sessions/{sid}")["unread"])
    assert gw.client.request("POST", f"/v1/sessions/{sid}/ack", {"jobs": [woken]})["acked"]  # a wake-up, ok
    until("the wake-up and the verdicts are journalled", lambda: counted <= kinds())
    before = _counters(gw)
    verdicts = [v for (name, _), v in before.items() if name == "frontdesk_guard_verdicts_total"]
    assert verdicts == [2.0], before
    assert sum(v for (name, _), v in before.items() if name == "frontdesk_deliveries_total") >= 1, before

    (gw.home / "frontdesk.toml").write_text(CONFIG)
    gw.restart()
    until("the wake-ups and verdicts are pruned", lambda: not counted & kinds())
    assert _counters(gw) == before  # the same counters, none lower (nothing new was counted meanwhile)
    assert "journal: a pruning pass failed" not in gw.log()
