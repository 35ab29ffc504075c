"""A name that goes into a request path (a session id from a hook payload, a job name) is sent percent-encoded:
a NUL, a space, CR LF or non-ASCII letters reach the route as that name (a clean not-found answer), never a
broken request line or a second, injected request."""

from __future__ import annotations

from typing import Any

import pytest

from frontdesk.errors import NotFound


@pytest.mark.parametrize(
    "sid",
    ["c\x00d", "two words", "x HTTP/1.1\r\nX-Injected: 1\r\n\r\nPOST /v1/jobs/1/cancel", "séance-ü", "tag#1"],
    ids=["nul", "space", "crlf-injection", "non-ascii", "hash"],
)
def test_a_session_id_in_the_path_is_sent_as_that_name(gateway: Any, sid: str) -> None:
    with pytest.raises(NotFound) as err:
        gateway.client.request("GET", "/v1/sessions/" + sid)
    assert "no session" in err.value.message or "no such endpoint" in err.value.message, err.value.message
    assert gateway.client.health()["ok"]


def test_an_injected_cancel_never_runs(gateway: Any) -> None:
    job = gateway.client.submit(spec={"command": ["sleep", "30"]}, context={"cwd": "/tmp"})
    sid = f"x HTTP/1.1\r\nHost: y\r\n\r\nPOST /v1/jobs/{job['id']}/cancel HTTP/1.1\r\nContent-Length: 0\r\n\r\n"
    with pytest.raises(NotFound):
        gateway.client.request("GET", "/v1/sessions/" + sid)
    assert gateway.client.job(job["id"])["state"] in ("PENDING", "RUNNING")
    gateway.client.request("POST", f"/v1/jobs/{job['id']}/cancel", {})
