"""`wait --timeout` (and the MCP wait tool, through the same client) with a value no gateway takes: infinity,
NaN, a number too large for a socket timeout. One line, exit 2, instead of a traceback or a false 'cannot
reach the gateway'."""

from __future__ import annotations

from typing import Any

import pytest

from frontdesk.client import Client
from frontdesk.errors import UserError


@pytest.mark.parametrize("value", ["inf", "1e308", "nan", "-1", "604801"])
def test_a_wait_timeout_out_of_range_is_one_line_and_exit_2(gateway: Any, value: str) -> None:
    job = gateway.client.submit(spec={"command": ["true"]}, context={"cwd": "/tmp"})
    r = gateway.cli("wait", str(job["id"]), "--timeout", value)
    assert r.returncode == 2, (value, r.returncode, r.stderr[-400:])
    assert len(r.stderr.strip().splitlines()) == 1 and "timeout" in r.stderr, r.stderr[-400:]


def test_the_client_refuses_it_before_sending(gateway: Any) -> None:
    with pytest.raises(UserError, match="timeout"):
        Client(socket_path=gateway.socket).wait([1], timeout=float("inf"))
    assert gateway.client.health()["ok"]


def test_run_wait_with_such_a_timeout_submits_nothing(gateway: Any) -> None:
    before = gateway.client.request("GET", "/v1/jobs")
    r = gateway.cli("run", "--wait", "--timeout", "inf", "--", "true")
    assert r.returncode == 2 and "timeout" in r.stderr, (r.returncode, r.stderr[-400:])
    assert gateway.client.request("GET", "/v1/jobs") == before
