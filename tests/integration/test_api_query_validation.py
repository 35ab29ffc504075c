"""Query and push inputs are checked, not taken as "nothing matched": an unknown job state in `GET /v1/jobs` and an
unknown backend in `POST /v1/notify` are bad input (400, one line), while the known ones still work."""

from __future__ import annotations

from typing import Any

import pytest

from frontdesk.errors import UserError


@pytest.fixture
def gw(gateway_factory: Any) -> Any:
    return gateway_factory(env={"FRONTDESK_PLUGINS": "none"})


def test_an_unknown_state_or_backend_is_bad_input(gw: Any) -> None:
    job = gw.client.submit(spec={"command": ["true"]}, context={"cwd": "/tmp"})["id"]
    gw.wait_state(job, {"COMPLETED"})
    assert [j["id"] for j in gw.client.request("GET", "/v1/jobs?state=completed")] == [job]
    assert gw.client.request("GET", "/v1/jobs?state=FAILED") == []
    for bad in ("BOGUS", "complete", "x" * 5000):
        with pytest.raises(UserError) as exc:
            gw.client.request("GET", f"/v1/jobs?state={bad}")
        assert exc.value.message.startswith("state: no job state") and "\n" not in exc.value.message
        assert len(exc.value.message) < 400
    with pytest.raises(UserError) as exc:
        gw.client.request("POST", "/v1/notify", {"backend": "bogus", "ids": ["1"]})
    assert exc.value.message.startswith("backend: no backend 'bogus'")
    assert gw.client.request("POST", "/v1/notify", {"backend": "local", "ids": []})["ok"] is True


def test_a_query_parameter_the_route_does_not_take_is_bad_input(gw: Any) -> None:
    """`?stat=FAILED` (a typo) listed every job, as if no filter had been asked for; now a one-line 400."""
    job = gw.client.submit(spec={"command": ["true"]}, context={"cwd": "/tmp"})["id"]
    gw.wait_state(job, {"COMPLETED"})
    for path in ("/v1/jobs?stat=FAILED", f"/v1/jobs/{job}?verbose=1", f"/v1/jobs/{job}/logs?tail=5&strem=stderr"):
        with pytest.raises(UserError) as exc:
            gw.client.request("GET", path)
        assert exc.value.message.startswith("unknown query parameter") and "\n" not in exc.value.message, path
    assert [j["id"] for j in gw.client.request("GET", "/v1/jobs?state=COMPLETED&limit=5")] == [job]
    assert gw.client.request("GET", f"/v1/jobs/{job}/logs?tail=5&stream=stderr") is not None


def test_the_fast_routes_leave_a_query_string_to_the_full_route(gw: Any) -> None:
    for path, body in (("/v1/jobs?dry=1", {"spec": {"command": ["true"]}}), ("/v1/wait?x=1", {"ids": [1]})):
        with pytest.raises(UserError) as exc:
            gw.client.request("POST", path, body)
        assert exc.value.message.startswith("unknown query parameter"), path
    assert gw.client.request("GET", "/v1/jobs") == []  # nothing stored
