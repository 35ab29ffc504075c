"""Items 5 and 9 of issue 12: hostile and edge-value input gets a clear one-line error (413 / 422 / 404),
never a 500, a stall or a job that fails later for a reason the spec already showed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fault_helpers import raw_request

from frontdesk.errors import SpecError
from frontdesk.spec.bounds import MAX_MESSAGE
from frontdesk.spec.model import parse_spec_text, validate_spec

BOMB = (
    'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
    "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
    "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
    "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
    "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
    "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
    "h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
    "i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n"
    "command: *i\n"
)


def _refused(text_or_data: Any) -> str:
    with pytest.raises(SpecError) as info:
        if isinstance(text_or_data, str):
            parse_spec_text(text_or_data)
        else:
            validate_spec(text_or_data)
    msg = str(info.value)
    assert "\n" not in msg and len(msg) <= MAX_MESSAGE
    return msg


def test_yaml_alias_bomb_is_refused_without_expanding_it() -> None:
    assert len(BOMB) < 700
    msg = _refused(BOMB)
    assert "alias" in msg and "lol" not in msg


def test_a_modest_expansion_is_refused_by_size_and_its_error_does_not_serialise_it() -> None:
    few = 'a: &a ["' + "x" * 5000 + '"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a]\ncommand: true\nenv: *b\n'
    msg = _refused(few)
    assert len(msg) <= MAX_MESSAGE and msg.count("x") < 100


def test_recursive_alias_is_refused() -> None:
    assert "itself" in _refused("command: &a [*a]\n")


@pytest.mark.parametrize("field", ["walltime", "backoff", "dependency_timeout"])
@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan", "1e400"])
def test_non_finite_durations_are_refused(field: str, value: str) -> None:
    where = {"walltime": "resources:\n  walltime: {v}\n", "backoff": "retry:\n  backoff: {v}\n"}.get(
        field, "dependency_timeout: {v}\n"
    )
    _refused('command: ["true"]\n' + where.format(v=value))


@pytest.mark.parametrize(
    "spec",
    [
        {"command": ["echo", "a\x00b"]},
        {"command": ["true"], "env": {"X": "a\x00b"}},
        {"command": ["true"], "workdir": "/tmp/a\x00b"},
        {"script": "echo hi\x00"},
        {"command": ["echo", "\ud800"]},
        {"command": ["true"], "session": "s\udfff"},
        {"command": ["true"], "env": {"X": "\ud800"}},
        {"command": ["true"], "name": "n", "pool": "\udc80"},
    ],
)
def test_nul_bytes_and_lone_surrogates_are_refused(spec: dict[str, Any]) -> None:
    msg = _refused(spec)
    assert "NUL" in msg or "surrogate" in msg


def test_half_a_second_of_walltime_is_one_second() -> None:
    spec = parse_spec_text('command: ["true"]\nresources:\n  walltime: 0.5\n')
    assert spec.resources.walltime == 1
    assert parse_spec_text('command: ["true"]\nresources:\n  walltime: 0.5s\n').resources.walltime == 1


def test_depends_on_is_bounded_and_deduplicated() -> None:
    _refused({"command": ["true"], "depends_on": list(range(1, 10_002))})
    _refused({"command": ["true"], "depends_on": [2**63]})
    assert validate_spec({"command": ["true"], "depends_on": [1, 1, 2, 1]}).depends_on == [1, 2]


def test_huge_sizes_and_long_values_are_refused_with_short_messages() -> None:
    _refused({"command": ["true"], "resources": {"memory": 2**70}})
    _refused({"command": ["true"], "resources": {"memory": "9" * 100_000}})
    _refused({"command": ["true"], "resources": {"walltime": "1" * 100_000}})


# -- against a real gateway ---------------------------------------------------------------------------------


@pytest.fixture
def gw(gateway_factory: Any) -> Any:
    return gateway_factory(env={"FRONTDESK_PLUGINS": "none"}, config='[local]\ncpus = 2\nmemory = "2G"\ngpus = 0\n')


def _body(status_and_body: tuple[int, bytes]) -> tuple[int, dict[str, Any]]:
    status, body = status_and_body
    payload = json.loads(body)
    assert {"error", "message"} <= set(payload) and "\n" not in payload["message"]
    assert len(payload["message"]) <= 400
    return status, payload


@pytest.mark.slow
@pytest.mark.parametrize("chunked", [False, True])
def test_request_bodies_over_the_cap_get_413(gw: Any, chunked: bool) -> None:
    big = json.dumps({"spec": {"command": ["true"], "env": {"X": "y" * (2 * 1024 * 1024)}}}).encode()
    status, payload = _body(raw_request(gw.socket, "POST", "/v1/jobs", big, chunked=chunked))
    assert status == 413 and payload["error"] == "too_large"
    assert gw.client.jobs() == [], "nothing stored"
    assert gw.client.health()["ok"]


@pytest.mark.slow
def test_alias_bomb_over_the_api_is_a_422(gw: Any) -> None:
    body = json.dumps({"spec_text": BOMB, "format": "yaml"}).encode()
    status, payload = _body(raw_request(gw.socket, "POST", "/v1/jobs", body))
    assert status == 422 and "alias" in payload["message"]


@pytest.mark.slow
def test_ids_past_two_to_the_63_are_not_a_500(gw: Any) -> None:
    big = 2**63
    for method, path, body in [
        ("GET", f"/v1/jobs/{big}", b""),
        ("GET", f"/v1/jobs/{big}/report", b""),
        ("POST", f"/v1/jobs/{big}/cancel", b""),
        ("GET", f"/v1/jobs/{big}/logs", b""),
        ("POST", "/v1/wait", json.dumps({"ids": [big], "timeout": 0}).encode()),
    ]:
        status, _ = _body(raw_request(gw.socket, method, path, body))
        assert status in (400, 404, 422), (method, path, status)


@pytest.mark.slow
def test_a_lone_surrogate_in_the_context_is_a_422(gw: Any) -> None:
    body = b'{"spec": {"command": ["true"]}, "context": {"session": "s\\ud800"}}'
    status, payload = _body(raw_request(gw.socket, "POST", "/v1/jobs", body))
    assert status == 422 and "surrogate" in payload["message"]
    assert gw.client.jobs() == []


@pytest.mark.slow
@pytest.mark.parametrize(
    ("resources", "why"),
    [({"cpus": 64}, "CPUs"), ({"gpus": 1}, "GPUs"), ({"memory": "4T"}, "memory")],
)
def test_a_job_that_can_never_fit_is_refused_at_once(gw: Any, resources: dict[str, Any], why: str) -> None:
    job = gw.client.submit(spec={"command": ["true"], "resources": resources})
    ended = gw.wait_state(job["id"], {"FAILED", "PENDING", "RUNNING", "COMPLETED"})
    assert ended["state"] == "FAILED" and "never run here" in ended["reason"] and why in ended["reason"]
    assert gw.client.report(job["id"])["state"] == "FAILED"


@pytest.mark.slow
def test_half_a_second_of_walltime_runs(gw: Any, tmp_path: Path) -> None:
    quick = gw.client.submit(spec={"command": ["true"], "resources": {"walltime": 0.5}})
    slow = gw.client.submit(spec={"command": ["sleep", "30"], "resources": {"walltime": 0.5}})
    rep = gw.client.wait([quick["id"], slow["id"]], "all", 60)
    states = {r["job_id"]: r["state"] for r in rep["reports"]}
    assert states == {quick["id"]: "COMPLETED", slow["id"]: "TIMEOUT"}
