"""`/metrics` on a gateway on the Slurm lab: the polling shield's answers and the controller RPCs they spared,
after real squeue shim calls, parsed by Prometheus's text parser."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.slurm


def _scrape(gw: Any) -> dict[str, float]:
    with httpx.Client(transport=httpx.HTTPTransport(uds=str(gw.socket)), timeout=30) as http:
        text = http.get("http://gateway/metrics").text
    return {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples if not s.labels}


def test_shield_counters_follow_real_shim_calls(slurm_lab: Path, gateway_factory: Any, tmp_path: Path) -> None:
    # Every call through the socket: an answer the `sh` shim reads from its rendered file is a `cat` the gateway
    # never sees, so it is not counted (docs/slurm.md, "view files").
    config = (
        '[gateway]\nbackend = "slurm"\ntick_seconds = 1.0\nplugins = ["slurm"]\n\n'
        "[slurm]\nrefresh_seconds = 2.0\nview_files = false\n"
    )
    gw = gateway_factory(config=config, env={"SLURM_CONF": str(slurm_lab / "etc" / "slurm.conf")})
    shims = tmp_path / "shims"
    assert gw.cli("shim", "install", str(shims), "--json").returncode == 0
    env = {**gw.env, "PATH": f"{shims}:{os.environ['PATH']}"}
    before = _scrape(gw)
    for _ in range(12):
        out = subprocess.run(["squeue", "--me", "-h"], env=env, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
    after = _scrape(gw)
    answered = after["frontdesk_shield_answers_total"] - before["frontdesk_shield_answers_total"]
    assert answered == 12
    saved = after["frontdesk_controller_rpcs_saved_total"] - before["frontdesk_controller_rpcs_saved_total"]
    assert saved == 24
    assert after["frontdesk_controller_queries_total"] >= before["frontdesk_controller_queries_total"]
