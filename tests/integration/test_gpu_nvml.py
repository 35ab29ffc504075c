"""The GPU watch reads NVML in-process when libnvidia-ml loads, and nvidia-smi otherwise.

No GPU here. The NVML path runs against a stand-in library (tests/data/gpu/nvml_standin.c) compiled with the
system cc into a temporary folder at test time (these tests skip, saying so, where there is no cc); the
nvidia-smi path runs the stand-in tests/data/gpu/nvidia-smi for real. Both stand-ins read the same files:
a process "holds GPU memory" while a file apps/<pid> names its device and MiB.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from frontdesk.backends.gpuwatch import GpuWatch
from frontdesk.backends.nvml import Nvml
from gpu_standin import gpu_standin, nvml_standin, on_path, smi_calls

MIB = 2**20


@pytest.fixture
def gpu_dir(tmp_path: Path) -> Path:
    """Two 80 GiB devices for both stand-ins, an empty apps/ folder and the nvidia-smi stand-in."""
    return gpu_standin(tmp_path / "gpu", utils=(30, 31))


@pytest.fixture
def nvml_lib(gpu_dir: Path) -> Path:
    """The stand-in libnvidia-ml.so.1, built with the system cc next to the devices it reads."""
    return nvml_standin(gpu_dir)


@pytest.fixture
def holders() -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for p in procs:
        p.kill()
        p.wait()


def _hold(gpu_dir: Path, procs: list[subprocess.Popen[bytes]], device: int, mib: int) -> int:
    p = subprocess.Popen(["sleep", "60"])
    procs.append(p)
    (gpu_dir / "apps" / str(p.pid)).write_text(f"{device} {mib}\n")
    return p.pid


def test_nvml_reads_devices_and_each_processs_memory(gpu_dir: Path, nvml_lib: Path, holders: list[Any]) -> None:
    nvml = Nvml.load(str(nvml_lib))
    assert nvml is not None
    mine = _hold(gpu_dir, holders, 0, 1500)
    other = _hold(gpu_dir, holders, 1, 700)
    assert nvml.sample([0, 1]) == [(0, 30.0, 1500 * MIB), (1, 31.0, 700 * MIB)]
    assert nvml.processes([0]) == {mine: 1500 * MIB}
    assert nvml.processes([0, 1]) == {mine: 1500 * MIB, other: 700 * MIB}
    nvml.close()


def test_nvml_grows_its_buffer_when_the_driver_says_insufficient_size(
    gpu_dir: Path, nvml_lib: Path, holders: list[Any]
) -> None:
    nvml = Nvml.load(str(nvml_lib))
    assert nvml is not None
    pids = {_hold(gpu_dir, holders, 1, 10 + i) for i in range(40)}  # more than the first 16-record buffer
    assert set(nvml.processes([1])) == pids
    assert sum(nvml.processes([1]).values()) == sum(10 + i for i in range(40)) * MIB


def test_no_library_means_no_nvml(tmp_path: Path) -> None:
    assert Nvml.load(str(tmp_path / "libnvidia-ml.so.1")) is None
    (tmp_path / "libnvidia-ml.so.1").write_text("not a shared library")
    assert Nvml.load(str(tmp_path / "libnvidia-ml.so.1")) is None


def test_the_watch_uses_nvml_and_runs_no_nvidia_smi(
    gpu_dir: Path, nvml_lib: Path, holders: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FRONTDESK_NVML_LIB", str(nvml_lib))
    monkeypatch.setenv("PATH", f"{gpu_dir}{os.pathsep}{os.environ['PATH']}")
    pid = _hold(gpu_dir, holders, 0, 23654)
    watch = GpuWatch("0", limit=20 * 2**30)
    assert watch.nvml is not None
    assert watch.sample(1.0, tree={pid}) == "GPU memory 23.1 GiB over the 20 GiB asked"
    assert not (gpu_dir / "nvidia-smi.args").exists()
    assert "nvmlDeviceGetComputeRunningProcesses_v3" in (gpu_dir / "nvml.calls").read_text()


def test_without_nvml_the_watch_runs_nvidia_smi(
    gpu_dir: Path, holders: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FRONTDESK_NVML_LIB", str(gpu_dir / "missing" / "libnvidia-ml.so.1"))
    monkeypatch.setenv("PATH", f"{gpu_dir}{os.pathsep}{os.environ['PATH']}")
    pid = _hold(gpu_dir, holders, 1, 23654)
    watch = GpuWatch("1", limit=20 * 2**30)
    assert watch.nvml is None
    assert watch.sample(1.0, tree={pid}) == "GPU memory 23.1 GiB over the 20 GiB asked"
    calls = (gpu_dir / "nvidia-smi.args").read_text()
    assert "--query-compute-apps=pid,used_memory" in calls
    assert watch.result()["gpu_mem_peak_bytes"] == 23654 * MIB


def test_a_failing_nvml_call_falls_back_to_nvidia_smi(
    gpu_dir: Path, nvml_lib: Path, holders: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FRONTDESK_NVML_LIB", str(nvml_lib))
    monkeypatch.setenv("PATH", f"{gpu_dir}{os.pathsep}{os.environ['PATH']}")
    pid = _hold(gpu_dir, holders, 0, 100)
    watch = GpuWatch("0", limit=20 * 2**30)
    (gpu_dir / "devices").write_text("")  # the driver no longer knows the device: NVML answers an error
    assert watch.sample(1.0, tree={pid}) is None
    assert watch.nvml is None
    assert "--query-compute-apps" in (gpu_dir / "nvidia-smi.args").read_text()
    assert watch.job_peak == 100 * MIB


def test_a_shared_gpu_job_over_its_memory_ends_out_of_memory_through_nvml(
    gateway_factory: Any, gpu_dir: Path, nvml_lib: Path, workdir: Path
) -> None:
    gw = gateway_factory(
        config='[local]\ncpus = 8\nmemory = "8G"\n',
        env={**on_path(gpu_dir), "FRONTDESK_NVML_LIB": str(nvml_lib)},
    )
    apps = shlex.quote(str(gpu_dir / "apps"))
    holder = f'sleep 120 & echo "$CUDA_VISIBLE_DEVICES 23654" > {apps}/$!; wait'
    spec = {"command": ["/bin/sh", "-c", holder], "resources": {"gpu": {"memory": "20G"}}}
    job = int(gw.client.submit(spec=spec, context={"cwd": str(workdir)})["id"])
    ended = gw.wait_state(job, {"OUT_OF_MEMORY", "COMPLETED", "FAILED"}, timeout=60)
    assert ended["state"] == "OUT_OF_MEMORY", ended
    assert ended["reason"] == "GPU memory 23.1 GiB over the 20 GiB asked"
    assert "nvmlDeviceGetComputeRunningProcesses_v3" in (gpu_dir / "nvml.calls").read_text()
    # the gateway may list devices with nvidia-smi; the shepherd did not
    assert "--query-compute-apps" not in smi_calls(gpu_dir)
