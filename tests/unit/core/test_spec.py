"""The job spec: validation, units, loading, and round-trips under hypothesis."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from frontdesk.errors import SpecError
from frontdesk.spec.model import JobSpec, parse_spec_text, validate_spec
from frontdesk.spec.units import format_bytes, format_duration, parse_duration, parse_memory


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("16G", 16 * 1024**3),
        ("512M", 512 * 1024**2),
        ("1.5GiB", int(1.5 * 1024**3)),
        ("100", 100),
        ("64k", 65536),
        (2048, 2048),
        ("2T", 2 * 1024**4),
    ],
)
def test_parse_memory(text: str | int, expected: int) -> None:
    assert parse_memory(text) == expected


@pytest.mark.parametrize("bad", ["lots", "", "-5G", "G", "12 Q", True])
def test_parse_memory_rejects(bad: object) -> None:
    with pytest.raises(ValueError):
        parse_memory(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("90s", 90),
        ("10m", 600),
        ("2h", 7200),
        ("1d", 86400),
        ("01:30:00", 5400),
        ("5:00", 300),
        ("1-00:00:00", 86400),
        (45, 45),
        ("2 hours", 7200),
        ("1.5h", 5400),
    ],
)
def test_parse_duration(text: str | int, expected: int) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("bad", ["soon", "0s", "1:2:3:4", "x-01:00:00", -3, ""])
def test_parse_duration_rejects(bad: object) -> None:
    with pytest.raises(ValueError):
        parse_duration(bad)  # type: ignore[arg-type]


def test_format_helpers() -> None:
    assert format_bytes(16 * 1024**3) == "16G"
    assert format_bytes(1536 * 1024**2) == "1.5G"
    assert format_duration(3725) == "1h02m" and format_duration(65) == "1m05s" and format_duration(1.25) == "1.2s"


def test_full_spec_from_yaml() -> None:
    spec = parse_spec_text("""
name: train-gpt
command: python train.py --lr 3e-4
workdir: runs/a
env: {WANDB_MODE: offline}
type: training
resources: {cpus: 8, memory: 64G, gpus: 4, gpu: {type: [h100, a100], min_memory: 40G, fp64: false},
            walltime: 2h}
trial: false
depends_on: [prep, 12]
retry: {count: 2, on: [NODE_FAIL, failed], backoff: 30s}
fail_action: continue
dependency_timeout: 1h
idempotency_key: train-gpt-v1
""")
    assert spec.command == ["python", "train.py", "--lr", "3e-4"]
    assert spec.resources.memory == 64 * 1024**3 and spec.resources.walltime == 7200
    assert spec.resources.gpu is not None and spec.resources.gpu.min_memory == 40 * 1024**3
    assert spec.retry.on == ["NODE_FAIL", "FAILED"] and spec.retry.backoff == 30
    assert spec.depends_on == ["prep", 12] and spec.dependency_timeout == 3600


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("command: [x]\nresources: {cpus: 0}", "resources.cpus"),
        ("command: [x]\nresources: {gpus: -1}", "resources.gpus"),
        ("command: [x]\ntype: quantum", "type"),
        ("command: [x]\nfail_action: explode", "fail_action"),
        ("command: [x]\nname: 'has space'", "name"),
        ("command: [x]\nenv: {'1BAD': x}", "env"),
        ("command: [x]\nscript: 'echo hi'", "(spec)"),
        ("{}", "(spec)"),
        ("command: [x]\nresources: {walltime: forever}", "resources.walltime"),
        ("command: [x]\nbogus: 1", "bogus"),
    ],
)
def test_bad_specs_name_the_field(text: str, field: str) -> None:
    with pytest.raises(SpecError) as exc:
        parse_spec_text(text)
    assert field in exc.value.message
    assert "\n" not in exc.value.message


def test_non_mapping_and_syntax_errors() -> None:
    with pytest.raises(SpecError, match="expected a mapping"):
        parse_spec_text("- a\n- b\n")
    with pytest.raises(SpecError, match="cannot parse"):
        parse_spec_text('{"command": [', "json")


def test_yaml_on_is_not_a_boolean() -> None:
    spec = parse_spec_text("command: [x]\nretry:\n  count: 1\n  on: [TIMEOUT]\n")
    assert spec.retry.on == ["TIMEOUT"]


_names = st.from_regex(r"[A-Za-z0-9_.@+-]{1,20}", fullmatch=True)
_args = st.lists(st.text(min_size=1, max_size=20).filter(lambda s: "\x00" not in s), min_size=1, max_size=5)


@given(
    name=_names,
    argv=_args,
    cpus=st.integers(1, 64),
    mem=st.integers(1, 1 << 40),
    gpus=st.integers(0, 8),
    wall=st.integers(1, 10**6),
    trial=st.booleans(),
)
def test_spec_round_trips_through_json(
    name: str, argv: list[str], cpus: int, mem: int, gpus: int, wall: int, trial: bool
) -> None:
    spec = validate_spec(
        {
            "name": name,
            "command": argv,
            "trial": trial,
            "resources": {"cpus": cpus, "memory": mem, "gpus": gpus, "walltime": wall},
        }
    )
    again = parse_spec_text(json.dumps(spec.model_dump(mode="json")), "json")
    assert again == spec
    assert JobSpec.model_validate(spec.model_dump()) == spec
