"""Fractional GPU requests in a spec: stored as one shared GPU, nonsense refused with one line."""

from __future__ import annotations

import pytest

from frontdesk.errors import SpecError
from frontdesk.spec.model import JobSpec, parse_spec_text

GiB = 1024**3


def res(text: str) -> JobSpec:
    return parse_spec_text(f"command: [train]\nresources: {text}")


@pytest.mark.parametrize(
    ("text", "memory", "share"),
    [
        ("{gpus: 0.25}", None, 0.25),
        ("{gpus: '0.5'}", None, 0.5),
        ("{gpu: {memory: 20G}}", 20 * GiB, None),
        ("{gpus: 1, gpu: {memory: 20G}}", 20 * GiB, None),
        ("{gpus: 0.25, gpu: {memory: 20G, type: a100}}", 20 * GiB, 0.25),
    ],
)
def test_fractional_requests_become_one_shared_gpu(text: str, memory: int | None, share: float | None) -> None:
    spec = res(text)
    r = spec.resources
    assert r.gpus == 1 and r.shared_gpu and r.gpu is not None
    assert (r.gpu.memory, r.gpu.share) == (memory, share)
    assert JobSpec.model_validate_json(spec.model_dump_json()) == spec  # the stored form reads back the same


def test_whole_gpus_stay_whole() -> None:
    assert not res("{gpus: 2, gpu: {min_memory: 40G}}").resources.shared_gpu
    assert res("{gpus: 1.0}").resources.gpus == 1


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{gpus: 1.5}", "gpus must be a whole number, or a fraction between 0 and 1"),
        ("{gpus: -0.5}", "gpus must be a whole number, or a fraction between 0 and 1"),
        ("{gpus: 2, gpu: {memory: 20G}}", "cannot go with gpus: 2"),
        ("{gpus: 0.25, gpu: {share: 0.5}}", "disagree"),
        ("{gpu: {memory: 0}}", "gpu.memory"),
        ("{gpu: {memory: lots}}", "gpu.memory"),
        ("{gpu: {share: 1.0}}", "gpu.share"),
    ],
)
def test_nonsense_is_one_clear_error(text: str, says: str) -> None:
    with pytest.raises(SpecError) as err:
        res(text)
    assert says in str(err.value) and "\n" not in str(err.value)
