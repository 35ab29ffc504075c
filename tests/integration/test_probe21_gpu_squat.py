"""Probe 21: a shared-GPU job's memory on a GPU it was NOT given counts against its share, through NVML too.

Before: through nvidia-smi the watch summed the job's processes over every device, but through NVML it asked
only the job's own devices, so a job that reset CUDA_VISIBLE_DEVICES and filled another GPU (one that other
shared jobs were packed onto) ran on unseen. The NVML stand-in (tests/data/gpu/nvml_standin.c) is built with
the system cc as in test_gpu_nvml.py; skipped, saying so, without one.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest

from gpu_standin import gpu_standin, nvml_standin, on_path, smi_calls


@pytest.fixture
def gpu_dir(tmp_path: Path) -> Path:
    d = gpu_standin(tmp_path / "gpu")
    nvml_standin(d)
    return d


def test_a_shared_job_filling_another_gpu_is_ended_through_nvml(
    gateway_factory: Any, gpu_dir: Path, workdir: Path
) -> None:
    gw = gateway_factory(
        config='[local]\ncpus = 8\nmemory = "8G"\n',
        env={
            **on_path(gpu_dir),
            "FRONTDESK_NVML_LIB": str(gpu_dir / "libnvidia-ml.so.1"),
        },
    )
    apps = shlex.quote(str(gpu_dir / "apps"))
    squat = f'sleep 20 & echo "$((1 - CUDA_VISIBLE_DEVICES)) 23654" > {apps}/$!; wait'
    spec = {"command": ["/bin/sh", "-c", squat], "resources": {"gpu": {"memory": "20G"}}}
    job = int(gw.client.submit(spec=spec, context={"cwd": str(workdir)})["id"])
    ended = gw.wait_state(job, {"OUT_OF_MEMORY", "COMPLETED", "FAILED"}, timeout=90)
    assert ended["state"] == "OUT_OF_MEMORY", ended
    assert ended["reason"] == "GPU memory 23.1 GiB over the 20 GiB asked"
    calls = (gpu_dir / "nvml.calls").read_text()
    assert "nvmlDeviceGetCount_v2" in calls and "nvmlDeviceGetComputeRunningProcesses_v3" in calls
    assert "--query-compute-apps" not in smi_calls(gpu_dir)  # read through NVML, not nvidia-smi
