"""Plug-in metadata is stored with the job: what the policy decided at admission survives a gateway kill -9."""

from __future__ import annotations

import shlex
import sqlite3
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(autouse=True)
def _policy_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FRONTDESK_PLUGINS", "policy")


def test_policy_meta_survives_a_restart(gateway_factory: Any, workdir: Path) -> None:
    gw = gateway_factory()
    gate = workdir / "gate"
    blocker = gw.client.submit(
        spec={"command": ["/bin/sh", "-c", f"while [ ! -e {shlex.quote(str(gate))} ]; do sleep 0.02; done"]},
        context={"cwd": str(workdir)},
    )["id"]
    waiting = gw.client.submit(
        spec={"command": ["true"], "depends_on": [blocker], "type": "hpc"}, context={"cwd": str(workdir)}
    )["id"]
    stored = sqlite3.connect(gw.home / "frontdesk.db").execute("SELECT plugin_meta FROM jobs WHERE id=?", (waiting,))
    assert '"policy"' in stored.fetchone()[0]
    gw.kill9()  # the policy plug-in's in-memory view is gone; the job's row keeps its meta
    gw.start()
    gate.touch()
    res = gw.client.wait([blocker, waiting], "all", 60)
    assert res["done"]
    policy = gw.client.report(waiting)["extra"]["policy"]
    assert policy["class_reason"] == "declared type hpc", policy  # None when the meta was lost
    assert policy["class"] == "hpc"
