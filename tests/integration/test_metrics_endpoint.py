"""`GET /metrics` on a real gateway after real jobs, parsed by Prometheus's own text parser."""

from __future__ import annotations

import json
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families


def _scrape(gw: Any) -> dict[str, list[Any]]:
    with httpx.Client(transport=httpx.HTTPTransport(uds=str(gw.socket)), timeout=30) as http:
        res = http.get("http://gateway/metrics")
    assert res.status_code == 200, res.text
    assert res.headers["content-type"].startswith("text/plain")
    return {f.name: f.samples for f in text_string_to_metric_families(res.text)}


def _value(samples: list[Any], name: str, **labels: str) -> float:
    got = [s.value for s in samples if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())]
    assert len(got) == 1, (name, labels, samples)
    return float(got[0])


def test_metrics_after_real_jobs(gateway_factory: Any, tmp_path: Any) -> None:
    gw = gateway_factory()
    ids = []
    for cmd in ("true", "false", "true"):
        out = gw.cli("run", "--json", "--name", f"m-{cmd}", "--", "sh", "-c", cmd, cwd=tmp_path)
        ids.append(json.loads(out.stdout.splitlines()[0])["id"] if out.stdout else None)
    for i in ids:
        gw.wait_state(i, {"COMPLETED", "FAILED"})
    # only checked, never run: the guard journals its verdict in this gateway
    denied = gw.cli("guard", "check", "--json", "--", "rm", "-rf", "/", cwd=tmp_path)
    assert denied.returncode == 2, denied.stdout + denied.stderr
    m = _scrape(gw)
    assert _value(m["frontdesk_jobs"], "frontdesk_jobs", state="COMPLETED") == 2
    assert _value(m["frontdesk_jobs"], "frontdesk_jobs", state="FAILED") == 1
    wait = m["frontdesk_queue_wait_seconds"]
    assert sum(s.value for s in wait if s.name == "frontdesk_queue_wait_seconds_count") == 3
    assert sum(s.value for s in wait if s.name == "frontdesk_queue_wait_seconds_sum") >= 0
    verdicts = m["frontdesk_guard_verdicts"]
    assert any(s.labels["verdict"] == "deny" and s.value >= 1 for s in verdicts), verdicts
    assert "frontdesk_queue_depth" in m and "frontdesk_deliveries" in m
    assert _value(m["frontdesk_wake_latency_seconds"], "frontdesk_wake_latency_seconds_count") >= 0
    assert _value(m["frontdesk_memory_hits"], "frontdesk_memory_hits_total") >= 0
    assert all(name.startswith("frontdesk_") for name in m)
