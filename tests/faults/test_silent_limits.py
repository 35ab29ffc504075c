"""Item 11 of issue 12: limits that used to be silent. `frontdesk events` pages past the gateway's page size
and says where it stopped at --limit; `logs --tail N` gives N lines when they exist; job output on disk is
capped by a site setting and the report says it was cut."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from frontdesk.events.models import Event, EventKind
from frontdesk.store.db import open_db
from frontdesk.store.jobs import JobStore

pytestmark = pytest.mark.slow


def test_events_page_past_the_gateway_page_and_say_where_a_limit_stopped(gateway_factory: Any) -> None:
    gw = gateway_factory(env={"FRONTDESK_PLUGINS": "none"}, start=False)
    gw.start()
    gw.stop()
    store = JobStore(open_db(_db(gw.home)))
    with store.conn:
        for i in range(23_998):
            store.append_event(Event(EventKind.NODE_DRAINED, data={"node": f"n{i}", "check": "x", "detail": "y"}))
    store.conn.close()
    gw.start()
    total = gw.client.health()["last_seq"]
    every = gw.cli("events", "--json", timeout=300)
    assert every.returncode == 0, every.stderr
    seqs = [json.loads(line)["seq"] for line in every.stdout.splitlines()]
    assert len(seqs) == total >= 23_998 and seqs == sorted(set(seqs))
    cut = gw.cli("events", "--json", "--limit", "100")
    assert cut.returncode == 0 and len(cut.stdout.splitlines()) == 100
    assert f"stopped at the limit of 100 events; more with --since {seqs[99]}" in cut.stderr
    rest = gw.cli("events", "--json", "--since", str(seqs[99]), "--limit", "5")
    assert [json.loads(x)["seq"] for x in rest.stdout.splitlines()] == seqs[100:105]


def _db(home: Path) -> Path:
    found = sorted(home.glob("*.db"))
    assert found, list(home.iterdir())
    return found[0]


def test_logs_tail_gives_n_lines_when_they_exist(gateway_factory: Any) -> None:
    gw = gateway_factory(env={"FRONTDESK_PLUGINS": "none"})
    cmd = "for i in $(seq 20000); do printf 'line %05d %0100d\\n' $i 0; done"
    job = gw.client.submit(spec={"command": ["/bin/bash", "-c", cmd]})
    gw.client.wait([job["id"]], "all", 120)
    lines = gw.client.logs(job["id"], tail=10000)["lines"]
    assert len(lines) == 10000 and lines[0].startswith("line 10001 ") and lines[-1].startswith("line 20000 ")
    out = gw.cli("logs", str(job["id"]), "--tail", "10000", "--json")
    assert out.returncode == 0 and len(json.loads(out.stdout)["lines"]) == 10000


def test_output_on_disk_is_capped_and_the_report_says_so(gateway_factory: Any) -> None:
    gw = gateway_factory(env={"FRONTDESK_PLUGINS": "none"}, config='[local]\noutput_max_bytes = "64K"\n')
    cmd = "for i in $(seq 40); do head -c 32768 /dev/zero | tr '\\0' x; echo; sleep 0.02; done; echo the-end"
    job = gw.client.submit(spec={"command": ["/bin/bash", "-c", cmd]})
    rep = gw.client.wait([job["id"]], "all", 120)["reports"][0]
    assert rep["state"] == "COMPLETED"
    stdout = Path(gw.client.logs(job["id"])["path"])
    assert stdout.stat().st_size <= 64 * 1024 + 33 * 1024
    text = stdout.read_text()
    assert text.startswith("frontdesk: ") and "bytes of stdout cut" in text.splitlines()[0]
    assert text.rstrip().endswith("the-end")
    assert any("output was cut at the site limit" in line for line in rep["stderr_tail"]), rep["stderr_tail"]
