"""A gateway SIGKILLed in a shared-GPU job's end: after the restart its share is freed exactly once.

Embedded backend with the stand-in nvidia-smi (tests/data/gpu, as tests/integration/test_gpu_sharing.py): two
80 GiB devices; a and b hold 30 GiB each of device 0, w holds device 1 whole, c and d (30 GiB each) wait. a ends
and the gateway is killed at each stage of the end's one commit. After the restart: a ended once (one terminal
state, one report), c starts on device 0 (a's share came back) and d still waits (not freed twice: b + c + d
would be 90 GiB of 80).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fault_helpers import until

from gpu_standin import gpu_standin, held_until_released, on_path

pytestmark = pytest.mark.slow

TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "DEPENDENCY_NEVER_SATISFIED"}


def _devices(flags: Path, name: str) -> str:
    path = flags / f"{name}.dev"
    until(lambda: path.exists() and path.read_text().endswith("\n"), timeout=60, what=f"{name}'s devices")
    return path.read_text().strip()


@pytest.mark.parametrize("point", ["after_report_built", "after_state_stored", "after_report_stored"])
def test_a_shared_gpu_jobs_end_cut_by_a_kill_frees_its_share_once(
    gateway_factory: Any, tmp_path: Path, workdir: Path, point: str
) -> None:
    env = {**on_path(gpu_standin(tmp_path / "gpu-bin", utils=(40, 40))), "FRONTDESK_FAULT": f"{point}:1"}
    gw = gateway_factory(config='[local]\ncpus = 8\nmemory = "8G"\n', env=env)
    share = {"gpu": {"memory": "30G"}}
    ids = {}
    for name, res in (("a", share), ("b", share), ("w", {"gpus": 1}), ("c", share), ("d", share)):
        ids[name] = gw.client.submit(spec={"command": held_until_released(workdir, name), "resources": res})["id"]
        if name != "c" and name != "d":
            gw.wait_state(ids[name], {"RUNNING"})
    assert [_devices(workdir, n) for n in "abw"] == ["0", "0", "1"]
    assert gw.client.job(ids["c"])["state"] == gw.client.job(ids["d"])["state"] == "PENDING"
    (workdir / "a.go").touch()
    until(lambda: gw.proc.poll() is not None, timeout=60, what="the gateway to die in a's end")
    assert gw.proc.returncode == -9
    gw.env.pop("FRONTDESK_FAULT")
    gw.start()
    assert _devices(workdir, "c") == "0"  # a's share came back
    gw.wait_state(ids["c"], {"RUNNING"})
    assert gw.client.job(ids["d"])["state"] == "PENDING"  # freed once: no room for d beside b and c
    gw.kill9()
    gw.start()
    assert gw.client.job(ids["d"])["state"] == "PENDING"
    events = list(gw.client.events(since=0))
    mine = [e for e in events if e["job_id"] == ids["a"]]
    assert len([e for e in mine if e["kind"] == "job.state" and e["data"].get("state") in TERMINAL]) == 1
    assert len([e for e in mine if e["kind"] == "job.report"]) == 1
    assert gw.client.report(ids["a"])["state"] == "COMPLETED"
    for name in "bwcd":
        (workdir / f"{name}.go").touch()
    done = gw.client.wait(list(ids.values()), "all", 120)
    assert done["done"], done["pending"]
    assert _devices(workdir, "d") in ("0", "1")
