"""Shared GPUs on the Slurm lab: fractional jobs become `--gres=shard:N` and real Slurm packs them on one GPU.

The lab's GPU nodes offer 8 shards per GPU, each tied to its GPU's (fake) device file; Slurm hands a GPU out
either whole or as shards, so what we observe is Slurm's own allocation (`scontrol show job -d`: IDX).
"""

from __future__ import annotations

import re
import shlex
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slurm


@pytest.fixture
def shard_gateway(slurm_lab: Path, gateway_factory: Any) -> Any:
    config = (
        '[gateway]\nbackend = "slurm"\ntick_seconds = 1.0\nplugins = ["slurm"]\n\n'
        "[slurm]\nrefresh_seconds = 1.0\n"  # shards per GPU as the lab's nodes declare them (8)
    )
    return gateway_factory(config=config, env={"SLURM_CONF": str(slurm_lab / "etc" / "slurm.conf")})


def _held(flags: Path, name: str) -> list[str]:
    out, go = shlex.quote(str(flags / f"{name}.env")), shlex.quote(str(flags / f"{name}.go"))
    return [
        "/bin/sh",
        "-c",
        f'echo "shards=${{SLURM_SHARDS_ON_NODE:-}}" > {out}; while [ ! -e {go} ]; do sleep 0.1; done',
    ]


def _allocation(backend_id: str) -> tuple[str, str, str]:
    """(node, gres name, device index) that Slurm gave the job, from `scontrol show job -d`."""
    text = subprocess.run(["scontrol", "show", "job", "-d", backend_id], capture_output=True, text=True).stdout
    m = re.search(r"Nodes=(\S+) .*?GRES=(gpu|shard)[:\w]*?:\d+\(IDX:(\d+)\)", text)
    assert m, text
    return m.group(1), m.group(2), m.group(3)


def _slurm_verdict(backend_id: str) -> tuple[str, str]:
    """(JobState, Reason) once Slurm's scheduler has looked at the job (Reason=None until then)."""
    deadline = time.monotonic() + 60
    while True:
        text = subprocess.run(["scontrol", "show", "job", backend_id], capture_output=True, text=True).stdout
        state, reason = re.search(r"JobState=(\S+) Reason=(\S+)", text).groups()  # type: ignore[union-attr]
        if reason != "None" or state != "PENDING" or time.monotonic() > deadline:
            return state, reason
        time.sleep(0.2)


def _running(gw: Any, job_id: int) -> dict[str, Any]:
    return gw.wait_state(job_id, {"RUNNING"}, timeout=60)


def test_shared_jobs_pack_on_one_gpu_as_shards_and_a_whole_gpu_job_is_kept_apart(
    shard_gateway: Any, workdir: Path
) -> None:
    gw = shard_gateway

    def submit(name: str, resources: dict[str, Any]) -> int:
        spec = {"command": _held(workdir, name), "workdir": str(workdir), "resources": resources}
        return int(gw.client.submit(spec=spec)["id"])

    quarter = {"gpus": 0.25, "gpu": {"type": "a100"}, "memory": "100M"}
    whole = {"gpus": 1, "gpu": {"type": "a100"}, "memory": "100M"}
    try:
        ids = {"a": submit("a", quarter), "b": submit("b", quarter), "w": submit("w", whole)}
        jobs = {name: _running(gw, job_id) for name, job_id in ids.items()}
        got = {name: _allocation(job["backend_id"]) for name, job in jobs.items()}
        assert {g[0] for g in got.values()} == {"a100n1"}
        assert got["a"][1] == got["b"][1] == "shard" and got["w"][1] == "gpu"
        assert got["a"][2] == got["b"][2] != got["w"][2], got  # both shares on one GPU, the whole job on the other
        deadline = time.monotonic() + 30
        while not all((workdir / f"{n}.env").exists() for n in ("a", "b")):
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert (workdir / "a.env").read_text() == "shards=2\n"  # a quarter of 8 shards
        # a second whole-GPU job finds no whole a100: one holds shares, the other is held whole
        second = submit("x", whole)
        assert _slurm_verdict(gw.client.job(second)["backend_id"]) == ("PENDING", "Resources")
    finally:
        for name in ("a", "b", "w", "x"):
            (workdir / f"{name}.go").touch()
    reports = gw.client.wait([*ids.values(), second], "all", 120)["reports"]
    assert {r["state"] for r in reports} == {"COMPLETED"}
