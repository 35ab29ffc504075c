"""A no-GPU job's shepherd reading the gateway's list of GPU processes (gpu-apps.json, backends/gpuwatch.py)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from frontdesk.backends.gpuwatch import APPS_STALE, GpuWatch


def _listing(tmp_path: Path, body: str, age: float = 0.0) -> str:
    path = tmp_path / "gpu-apps.json"
    path.write_text(body)
    at = time.time() - age
    os.utime(path, (at, at))
    return str(path)


def test_a_listed_process_of_the_job_names_its_device(tmp_path: Path) -> None:
    path = _listing(tmp_path, json.dumps({"at": 0, "apps": [[1, 500, 2**30], [0, 42, 60 * 2**30]]}))
    watch = GpuWatch("", apps=path)
    assert watch.sample(time.time(), {7, 42}) == (
        "GPU 0 used (60 GiB) by a job that asked no GPU; a job uses only the GPUs it was given"
    )
    assert GpuWatch("", apps=path).sample(time.time(), {7, 8}) is None  # others' processes: not this job's


def test_a_job_given_a_device_does_not_read_the_list(tmp_path: Path) -> None:
    path = _listing(tmp_path, json.dumps({"apps": [[0, 42, 2**30]]}))
    assert GpuWatch("0", apps=path).apps is None


def test_a_stale_list_is_not_trusted(tmp_path: Path) -> None:
    path = _listing(tmp_path, json.dumps({"apps": [[0, 42, 2**30]]}), age=APPS_STALE + 5)
    assert GpuWatch("", apps=path).sample(time.time(), {42}) is None  # a gateway gone: its pids may be reused


def test_an_unchanged_list_is_read_once(tmp_path: Path) -> None:
    path = _listing(tmp_path, json.dumps({"apps": [[0, 42, 2**30]]}))
    watch = GpuWatch("", apps=path)
    now = time.time()
    assert watch.sample(now, {42}) is not None
    assert watch.sample(now + GpuWatch.EVERY, {42}) is None  # same mtime: the same list, not read again


@pytest.mark.parametrize(
    "body",
    ["", "not json", "[]", '{"apps": 3}', '{"apps": [[0, 42]]}', '{"apps": [["x", 42, 1]]}', '{"apps": [null]}'],
)
def test_a_broken_list_ends_nothing_and_raises_nothing(tmp_path: Path, body: str) -> None:
    assert GpuWatch("", apps=_listing(tmp_path, body)).sample(time.time(), {42}) is None


def test_no_list_yet(tmp_path: Path) -> None:
    assert GpuWatch("", apps=str(tmp_path / "absent.json")).sample(time.time(), {42}) is None
