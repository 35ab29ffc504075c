"""The `--json` output of the job commands is a stable schema: pinned by golden files (values normalised)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from golden_helpers import check_shape

GOLDEN = Path(__file__).parents[1] / "golden" / "cli"


@pytest.fixture(autouse=True)
def _core_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FRONTDESK_PLUGINS", "none")


def _check(name: str, data: Any) -> None:
    check_shape(GOLDEN / f"{name}.json", data)


def test_job_commands_json_schema(gateway, workdir: Path) -> None:
    r = gateway.cli(
        "run", "--name", "g", "--mem", "64M", "--time", "1m", "--json", "--", "sh", "-c", "echo hi", cwd=workdir
    )
    submitted = json.loads(r.stdout)
    _check("run", submitted)
    job = str(submitted["id"])
    waited = json.loads(gateway.cli("wait", job, "--json").stdout)
    _check("wait", waited)
    _check("status", json.loads(gateway.cli("status", job, "--json").stdout))
    _check("report", json.loads(gateway.cli("report", job, "--json").stdout))
    _check("logs", json.loads(gateway.cli("logs", job, "--json").stdout))
    _check("queue", json.loads(gateway.cli("queue", "--json").stdout))
    events = [json.loads(line) for line in gateway.cli("events", "--json").stdout.splitlines()]
    assert [e["kind"] for e in events] == ["job.submitted", "job.state", "job.state", "job.report"]
    _check("event", events[0])
    err = gateway.cli("status", "4242", "--json")
    assert err.returncode == 3
    _check("error", json.loads(err.stdout))
