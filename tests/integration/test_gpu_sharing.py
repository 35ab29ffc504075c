"""Shared GPUs on the embedded backend, end to end: a real gateway, real jobs, real shepherds, real kills.

No GPU here: the stand-in tests/data/gpu/nvidia-smi is on the gateway's PATH. It lists the devices of its
gpus.json and, as compute apps, the live processes named in its apps/ folder, each holding the memory its
file says. A job "allocates GPU memory" by writing `apps/<pid>` for one of its processes, as a CUDA
program would; the shepherd sees it through the same nvidia-smi queries it makes on a real GPU.
"""

from __future__ import annotations

import json
import os
import shlex
import time
from pathlib import Path
from typing import Any

import pytest

from gpu_standin import gpu_standin, held_until_released, on_path

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "cli"


@pytest.fixture
def gpu_bin(tmp_path: Path) -> Path:
    """A folder holding the stand-in nvidia-smi, two 80 GiB devices and an empty apps/ folder."""
    return gpu_standin(tmp_path / "gpu-bin", utils=(40, 40))


@pytest.fixture
def gpu_gateway(gateway_factory: Any, gpu_bin: Path) -> Any:
    return gateway_factory(config='[local]\ncpus = 8\nmemory = "8G"\n', env=on_path(gpu_bin))


def _submit(gw: Any, workdir: Path, command: list[str], resources: dict[str, Any]) -> int:
    spec = {"command": command, "resources": resources}
    return int(gw.client.submit(spec=spec, context={"cwd": str(workdir)})["id"])


def _devices(flags: Path, name: str, gw: Any, job_id: int) -> str:
    gw.wait_state(job_id, {"RUNNING"})
    path = flags / f"{name}.dev"
    deadline = time.monotonic() + 30
    while not path.exists() or not path.read_text().endswith("\n"):
        assert time.monotonic() < deadline, f"{name} never wrote its devices"
        time.sleep(0.05)
    return path.read_text().strip()


def test_fractional_jobs_pack_on_one_device_and_a_whole_gpu_job_is_kept_apart(gpu_gateway: Any, workdir: Path) -> None:
    gw, flags = gpu_gateway, workdir
    share = {"gpu": {"memory": "30G"}}
    a = _submit(gw, workdir, held_until_released(flags, "a"), share)
    b = _submit(gw, workdir, held_until_released(flags, "b"), {"gpus": 0.375})  # 30 GiB of an 80 GiB device
    w = _submit(gw, workdir, held_until_released(flags, "w"), {"gpus": 1})
    c = _submit(gw, workdir, held_until_released(flags, "c"), share)
    # a and b share device 0 (60 of 80 GiB); the whole-GPU job gets device 1 to itself
    assert [_devices(flags, n, gw, j) for n, j in (("a", a), ("b", b), ("w", w))] == ["0", "0", "1"]
    # c fits neither device 0 (20 GiB left) nor device 1 (held whole): it waits, never beside w
    assert gw.client.job(c)["state"] == "PENDING"
    _check_cluster_view(gw, workdir)
    (flags / "w.go").touch()
    assert _devices(flags, "c", gw, c) == "1"
    ended_w, started_c = gw.wait_state(w, {"COMPLETED"}), gw.client.job(c)
    assert started_c["started_at"] >= ended_w["ended_at"], "a shared job ran beside a whole-GPU job"
    for name in ("a", "b", "c"):
        (flags / f"{name}.go").touch()
    reports = gw.client.wait([a, b, c], "all", 60)["reports"]
    assert {r["state"] for r in reports} == {"COMPLETED"}


def _golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("FRONTDESK_REGEN_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), f"{name} changed; regenerate on purpose (FRONTDESK_REGEN_GOLDEN=1) and review"


def _check_cluster_view(gw: Any, workdir: Path) -> None:
    """`frontdesk cluster` shows each GPU's free memory and who holds it (text and --json, golden)."""
    me = gw.client.job(1)["principal"]
    shown = gw.cli("cluster", "--json", cwd=workdir)
    assert shown.returncode == 0, shown.stderr
    devices = json.loads(shown.stdout)["gpus"]
    assert [(d["mode"], d["free_bytes"], [h["job_id"] for h in d["holders"]]) for d in devices] == [
        ("shared", 20 * 2**30, [1, 2]),
        ("whole", 0, [3]),
    ]
    _golden("cluster-gpus.json", json.dumps(devices, indent=2, sort_keys=True).replace(f'"{me}"', '"<user>"') + "\n")
    text = gw.cli("cluster", cwd=workdir).stdout
    gpu_lines = [line for line in text.splitlines() if line.startswith("  gpu ")]
    _golden("cluster-gpus.txt", "\n".join(gpu_lines).replace(f"({me})", "(<user>)") + "\n")


def _uses_gpu_memory(apps: Path, mib: int, seconds: int) -> list[str]:
    """A job whose child process holds `mib` MiB on its device (as the stand-in's compute app) for a while."""
    holder = f'sleep {seconds} & echo "$CUDA_VISIBLE_DEVICES {mib}" > {shlex.quote(str(apps))}/$!; echo $! > pid; wait'
    return ["/bin/sh", "-c", holder]


def test_a_gpu_memory_overrun_ends_out_of_memory_with_a_gpu_cause(
    gpu_gateway: Any, gpu_bin: Path, workdir: Path
) -> None:
    gw, apps = gpu_gateway, gpu_bin / "apps"
    # a process outside the job holds most of the device: only the job's own process tree counts against it
    (apps / str(os.getpid())).write_text("0 70000\n")
    within = workdir / "within"
    within.mkdir()
    ok = _submit(gw, within, _uses_gpu_memory(apps, 15000, 3), {"gpu": {"memory": "20G"}})
    over = _submit(gw, workdir, _uses_gpu_memory(apps, 23654, 120), {"gpu": {"memory": "20G"}})
    ended = gw.wait_state(over, {"OUT_OF_MEMORY", "COMPLETED", "FAILED"}, timeout=60)
    assert ended["state"] == "OUT_OF_MEMORY"
    assert ended["reason"] == "GPU memory 23.1 GiB over the 20 GiB asked"
    holder = int((workdir / "pid").read_text())
    assert not Path(f"/proc/{holder}").exists() or "zombie" in Path(f"/proc/{holder}/status").read_text()
    full = gw.client.report(over)
    assert full["requested"]["gpu_shared"] == {"memory_bytes": 20 * 2**30, "share": None}
    assert "gpu shared (20G" in full["text"]
    report = full["classification"]
    assert report["kind"] == "cuda_oom", report
    assert report["summary"] == "GPU memory 23.1 GiB over the 20 GiB asked"
    assert "gpu.memory" in report["next_step"]
    kept = gw.client.wait([ok], "all", 60)["reports"][0]
    assert kept["state"] == "COMPLETED"
    assert kept["used"]["gpu_mem_peak_bytes"] == 15000 * 2**20  # its own processes' memory, not the device's


def test_nonsense_requests_get_one_clear_error(gpu_gateway: Any, workdir: Path) -> None:
    gw = gpu_gateway
    bad = gw.cli("run", "--gpus", "1.5", "--", "true", cwd=workdir)
    assert bad.returncode != 0 and "gpus must be a whole number, or a fraction" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
    big = _submit(gw, workdir, ["true"], {"gpu": {"memory": "100G"}})
    ended = gw.wait_state(big, {"FAILED", "COMPLETED", "RUNNING"})
    assert ended["state"] == "FAILED"
    assert "it asks for 100G of GPU memory and the largest GPU here has 80G" in ended["reason"]
    shared = gw.cli("run", "--json", "--gpus", "0.5", "--", "sh", "-c", 'echo "$CUDA_VISIBLE_DEVICES"', cwd=workdir)
    assert shared.returncode == 0, shared.stderr
    job = json.loads(shared.stdout)
    assert job["spec"]["resources"]["gpus"] == 1 and job["spec"]["resources"]["gpu"]["share"] == 0.5


def test_a_restarted_gateway_keeps_the_shares_its_running_jobs_hold(gpu_gateway: Any, workdir: Path) -> None:
    gw, flags = gpu_gateway, workdir
    try:
        a = _submit(gw, workdir, held_until_released(flags, "a"), {"gpu": {"memory": "50G"}})
        assert _devices(flags, "a", gw, a) == "0"
        gw.kill9()
        gw.start()  # the shepherd kept the job running; the new gateway reads its hold back from the launch file
        b = _submit(gw, workdir, held_until_released(flags, "b"), {"gpu": {"memory": "50G"}})
        assert _devices(flags, "b", gw, b) == "1"  # 50 + 50 GiB do not fit one 80 GiB device
        shown = json.loads(gw.cli("cluster", "--json", cwd=workdir).stdout)["gpus"]
        assert [[h["job_id"] for h in d["holders"]] for d in shown] == [[a], [b]]
    finally:
        for name in ("a", "b"):
            (flags / f"{name}.go").touch()
    assert {r["state"] for r in gw.client.wait([a, b], "all", 60)["reports"]} == {"COMPLETED"}


def test_an_agent_asks_for_a_gpu_share_through_mcp(gpu_gateway: Any, workdir: Path) -> None:
    import asyncio
    import sys

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    gw = gpu_gateway
    params = StdioServerParameters(command=sys.executable, args=["-m", "frontdesk.cli.main", "mcp"], env=gw.env)

    async def go() -> dict[str, Any]:
        async with Client(params) as c:
            args = {"command": "sh -c 'echo dev=$CUDA_VISIBLE_DEVICES'", "gpus": 0.5, "workdir": str(workdir)}
            result = await c.call_tool("submit", args)
            return dict(json.loads("".join(getattr(x, "text", "") for x in result.content))["job"])

    job = asyncio.run(asyncio.wait_for(go(), 120))
    done = gw.client.wait([job["id"]], "all", 60)["reports"][0]
    assert done["state"] == "COMPLETED" and done["stdout_tail"] == ["dev=0"]
    assert done["requested"]["gpu_shared"] == {"memory_bytes": None, "share": 0.5}


def test_the_web_page_shows_each_gpu_its_mode_free_memory_and_holders(gpu_gateway: Any, workdir: Path) -> None:
    import re

    import httpx

    flags = workdir / "flags"
    flags.mkdir()
    shared = _submit(gpu_gateway, workdir, held_until_released(flags, "s"), {"gpus": 0.25, "gpu": {"memory": "20G"}})
    whole = _submit(gpu_gateway, workdir, held_until_released(flags, "w"), {"gpus": 1})
    _devices(flags, "s", gpu_gateway, shared)
    _devices(flags, "w", gpu_gateway, whole)
    with httpx.Client(transport=httpx.HTTPTransport(uds=str(gpu_gateway.socket)), timeout=30) as http:
        page = http.get("http://gateway/").text
    panel = re.search(r"<h2>GPUs</h2>(.*?)(?=<h2>|</div>)", page, flags=re.S)
    assert panel, "no GPUs panel"
    rows = re.findall(
        r"<tr><td>(\d)</td><td>[^<]*</td><td>(\w+)</td><td>([^<]*)</td><td>([^<]*)</td></tr>", panel.group(1)
    )
    by_mode = {mode: (free, held) for _, mode, free, held in rows}
    assert set(by_mode) == {"shared", "whole"}
    assert by_mode["shared"][0].startswith("60") and f"job {shared}" in by_mode["shared"][1]  # 80G less the 20G share
    assert f"job {whole}" in by_mode["whole"][1] and by_mode["whole"][1].endswith("whole")
    for name in ("s", "w"):
        (flags / f"{name}.go").touch()
