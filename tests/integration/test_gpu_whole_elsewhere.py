"""A whole-GPU job (`gpus: 1`) that resets CUDA_VISIBLE_DEVICES and fills another device is ended (issue 21).

Before: only shared-GPU jobs' processes were looked for across devices; a whole-GPU job could put 60 GiB on
the GPU another job held, unseen. Now the shepherd looks for a whole-GPU job's processes on every device it
was not given: found there, the job ends OUT_OF_MEMORY (as a shared job over its share), the cause naming the
device and the rule; the device's holder runs on. Through the stand-in nvidia-smi on PATH, and through the
NVML stand-in (built with the system cc, as test_gpu_nvml.py; that case is skipped, saying so, without one).
"""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path
from typing import Any

import pytest

from gpu_standin import gpu_standin, nvml_standin, on_path, smi_calls


@pytest.fixture
def gpu_dir(tmp_path: Path) -> Path:
    """The stand-in nvidia-smi, two 80 GiB devices and an empty apps/ folder."""
    return gpu_standin(tmp_path / "gpu")


def _nvml(gpu_dir: Path) -> dict[str, str]:
    return {"FRONTDESK_NVML_LIB": str(nvml_standin(gpu_dir))}


def _holder(gateway_factory: Any, gpu_dir: Path, workdir: Path, through: str) -> tuple[Any, int, str]:
    """A gateway on the stand-in GPUs, read through `through`, running a whole-GPU holder: it uses its own
    device (allowed), writes it to workdir/holder.dev and runs until workdir/go exists. (gateway, its id, apps/)"""
    env = {**on_path(gpu_dir), **(_nvml(gpu_dir) if through == "nvml" else {})}
    gw = gateway_factory(config='[local]\ncpus = 8\nmemory = "8G"\n', env=env)
    apps, go, ready = (shlex.quote(str(p)) for p in (gpu_dir / "apps", workdir / "go", workdir / "holder.dev"))
    hold = (
        f'sleep 300 & echo "$CUDA_VISIBLE_DEVICES 1000" > {apps}/$!; echo "$CUDA_VISIBLE_DEVICES" > {ready}; '
        f"while [ ! -e {go} ]; do sleep 0.05; done; kill $!"
    )
    holder = int(gw.client.submit(spec={"command": ["/bin/sh", "-c", hold], "resources": {"gpus": 1}})["id"])
    gw.wait_state(holder, {"RUNNING"})
    return gw, holder, apps


@pytest.mark.parametrize("through", ["nvidia-smi", "nvml"])
def test_a_whole_gpu_job_on_a_gpu_it_was_not_given_is_ended(
    gateway_factory: Any, gpu_dir: Path, workdir: Path, through: str
) -> None:
    gw, holder, apps = _holder(gateway_factory, gpu_dir, workdir, through)
    # the squatter gets the other device and puts 60 GiB on the holder's
    squat = f'sleep 60 & echo "$((1 - CUDA_VISIBLE_DEVICES)) 61440" > {apps}/$!; wait'
    job = gw.client.submit(spec={"command": ["/bin/sh", "-c", squat], "resources": {"gpus": 1}})["id"]
    ended = gw.wait_state(job, {"OUT_OF_MEMORY", "COMPLETED", "FAILED"}, timeout=90)
    given = (workdir / "holder.dev").read_text().strip()
    other = str(1 - int(given))
    assert ended["state"] == "OUT_OF_MEMORY", ended
    assert ended["reason"] == (
        f"GPU {given} used (60 GiB) but not given to this job (given: GPU {other}); "
        "a job uses only the GPUs it was given"
    )
    assert gw.client.job(holder)["state"] == "RUNNING"  # the device's holder is unaffected
    (workdir / "go").touch()
    assert gw.wait_state(holder, {"COMPLETED", "FAILED", "OUT_OF_MEMORY"}, timeout=60)["state"] == "COMPLETED"
    if through == "nvml":
        assert "nvmlDeviceGetCount_v2" in (gpu_dir / "nvml.calls").read_text()
        assert "--query-compute-apps" not in smi_calls(gpu_dir)


@pytest.mark.parametrize("through", ["nvidia-smi", "nvml"])
def test_a_job_that_asked_no_gpu_on_a_gpu_is_ended(
    gateway_factory: Any, gpu_dir: Path, workdir: Path, through: str
) -> None:
    gw, holder, apps = _holder(gateway_factory, gpu_dir, workdir, through)
    for _ in range(600):  # its device is written once its shell runs
        given = (workdir / "holder.dev").read_text().strip() if (workdir / "holder.dev").exists() else ""
        if given:
            break
        time.sleep(0.05)
    # a job that asked no GPU and touches none runs to its end: the watch sees only what a job holds
    quiet = gw.client.submit(spec={"command": ["/bin/sh", "-c", "sleep 5; echo done"]})["id"]
    # a job that asked no GPU (CUDA_VISIBLE_DEVICES empty) puts 60 GiB on the holder's device
    squat = f'[ -z "$CUDA_VISIBLE_DEVICES" ] || exit 7; sleep 60 & echo "{given} 61440" > {apps}/$!; wait'
    job = gw.client.submit(spec={"command": ["/bin/sh", "-c", squat]})["id"]
    ended = gw.wait_state(job, {"OUT_OF_MEMORY", "COMPLETED", "FAILED"}, timeout=90)
    assert ended["state"] == "OUT_OF_MEMORY", ended
    assert ended["reason"] == (
        f"GPU {given} used (60 GiB) by a job that asked no GPU; a job uses only the GPUs it was given"
    )
    assert gw.client.job(holder)["state"] == "RUNNING"  # the device's holder is unaffected
    assert gw.wait_state(quiet, {"COMPLETED", "FAILED", "OUT_OF_MEMORY"}, timeout=60)["state"] == "COMPLETED"
    (workdir / "go").touch()
    assert gw.wait_state(holder, {"COMPLETED", "FAILED", "OUT_OF_MEMORY"}, timeout=60)["state"] == "COMPLETED"
    assert (gw.home / "local" / "gpu-apps.json").exists()  # the gateway's one shared read, not the shepherds'
    if through == "nvml":
        assert "nvmlDeviceGetCount_v2" in (gpu_dir / "nvml.calls").read_text()
        assert "--query-compute-apps" not in smi_calls(gpu_dir)  # the gateway's read went through NVML too


def test_a_machine_without_gpus_reads_none_for_a_job_that_asked_none(gateway_factory: Any) -> None:
    gw = gateway_factory(config='[local]\ncpus = 8\nmemory = "8G"\n')
    job = gw.client.submit(spec={"command": ["/bin/sh", "-c", "echo ok"]})["id"]
    assert gw.wait_state(job, {"COMPLETED", "FAILED", "OUT_OF_MEMORY"}, timeout=60)["state"] == "COMPLETED"
    assert not (gw.home / "local" / "gpu-apps.json").exists()
    assert json.loads((gw.home / "local" / f"{job}.1" / "launch.json").read_text()).get("gpu_apps") is None
