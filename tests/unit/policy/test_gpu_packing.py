"""Shared GPUs: fractional jobs pack onto one device by memory; whole-GPU jobs never share a device."""

from __future__ import annotations

from frontdesk.backends.gpushare import GpuLedger, Hold, SharedNeed
from frontdesk.backends.local import FreeResources, QueuedJob, greedy_pick
from frontdesk.policy.config import parse_policy
from frontdesk.policy.embedded import make_picker
from frontdesk.policy.priority import FairshareLedger

GiB = 1024**3
MODELS = {0: "NVIDIA A100-SXM4-80GB", 1: "NVIDIA A100-SXM4-80GB"}
MEMORY = {0: 80 * GiB, 1: 80 * GiB}


def job(bid: str, n: int, gpus: int = 0, mem: int | None = None, share: float | None = None) -> QueuedJob:
    return QueuedJob(
        bid, n, 1, GiB, gpus, (), 600, 0, float(n), None, {"class": "agent"}, gpu_memory_bytes=mem, gpu_share=share
    )


def free(running: tuple[Hold, ...] = ()) -> FreeResources:
    ledger = GpuLedger(MODELS, MEMORY, running)
    return FreeResources(64, 512 * GiB, tuple(ledger.free_whole()), MODELS, (), 64, 512 * GiB, MEMORY, running)


def test_shared_jobs_fill_one_device_before_opening_another() -> None:
    ledger = GpuLedger(MODELS, MEMORY, ())
    got = [ledger.take(1, (), SharedNeed(memory_bytes=20 * GiB)) for _ in range(5)]
    assert [h[0].index for h in got if h] == [0, 0, 0, 0, 1]  # four 20 GiB shares fill device 0 (best fit)
    assert ledger.free_shared() == {0: 0, 1: 60 * GiB}
    assert ledger.take(1) is None  # no device is free for a whole-GPU job now


def test_a_whole_gpu_job_and_a_shared_job_never_share_a_device() -> None:
    ledger = GpuLedger(MODELS, MEMORY, ())
    whole = ledger.take(1)
    shared = ledger.take(1, (), SharedNeed(share=0.25))
    assert whole == (Hold(0),) and shared == (Hold(1, 20 * GiB),)
    assert ledger.take(1) is None
    assert ledger.take(1, (), SharedNeed(memory_bytes=61 * GiB)) is None  # 60 GiB left on device 1
    assert ledger.take(1, (), SharedNeed(memory_bytes=60 * GiB)) == (Hold(1, 60 * GiB),)


def test_a_share_asks_that_share_of_the_devices_memory_and_compute() -> None:
    assert SharedNeed(share=0.25).bytes_on(80 * GiB) == 20 * GiB
    assert SharedNeed(memory_bytes=20 * GiB, share=0.5).bytes_on(80 * GiB) == 20 * GiB
    assert SharedNeed(memory_bytes=20 * GiB).percent_on(80 * GiB) == 25
    assert SharedNeed(memory_bytes=20 * GiB, share=0.5).percent_on(80 * GiB) == 50


def test_devices_of_unknown_memory_take_no_shared_job() -> None:
    ledger = GpuLedger({0: "virtual"}, {0: 0}, ())
    assert ledger.take(1, (), SharedNeed(share=0.5)) is None and ledger.take(1) == (Hold(0),)


def test_greedy_pick_packs_shares_and_keeps_the_whole_job_apart() -> None:
    queued = [job("a", 1, 1, mem=30 * GiB), job("b", 2, 1, mem=30 * GiB), job("w", 3, 1), job("c", 4, 1, mem=30 * GiB)]
    assert greedy_pick(queued, free(), 0.0) == ["a", "b", "w"]  # c would need a third device
    # with device 1 held whole by a running job, the shares still pack on device 0 and the whole job waits
    assert greedy_pick(queued, free((Hold(1),)), 0.0) == ["a", "b"]


def test_the_policy_picker_gives_devices_in_plan_order() -> None:
    cfg = parse_policy({})
    pick = make_picker(lambda: cfg, {}, FairshareLedger(), lambda now: 12.0, lambda: False)
    queued = [job("a", 1, 1, share=0.5), job("b", 2, 1, share=0.5), job("c", 3, 1, share=0.5), job("w", 4, 1)]
    assert pick(queued, free(), 0.0) == ["a", "b", "c"]  # c opens device 1, so the whole-GPU job waits
    assert pick(queued, free((Hold(0, 80 * GiB),)), 0.0) == ["a", "b"]


def test_a_shared_job_under_mps_gets_its_share_and_memory_cap() -> None:
    from frontdesk.backends.localgpu import gpu_env

    need = SharedNeed(memory_bytes=20 * GiB)
    assert gpu_env((Hold(1, 20 * GiB),), need, 80 * GiB, {}) == {"CUDA_VISIBLE_DEVICES": "1"}
    assert gpu_env((Hold(1, 20 * GiB),), need, 80 * GiB, {"mps": True}) == {
        "CUDA_VISIBLE_DEVICES": "1",
        "CUDA_MPS_PIPE_DIRECTORY": "/tmp/nvidia-mps",
        "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "25",
        "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "0=20480MB",
    }
    assert gpu_env((Hold(0), Hold(1)), None, 80 * GiB, {"mps": True}) == {"CUDA_VISIBLE_DEVICES": "0,1"}


def test_the_policy_places_a_gpu_share_on_a_gpu_node_and_packs_it() -> None:
    from frontdesk.policy.model import JobView, NodeView
    from frontdesk.policy.placement import place

    nodes = [NodeView("cpu1", "p", 64, 256 * GiB), NodeView("gpu1", "p", 64, 256 * GiB, gpus=8, gpu_model="H100")]
    share = JobView("s", "u", "training", "p", cpus=4, memory_bytes=GiB, shared_gpu=True)
    cpu = JobView("c", "u", "training", "p", cpus=4, memory_bytes=GiB)
    placed = place(share, nodes, "whole_node")
    assert placed is not None and placed[0][0].node == "gpu1" and placed[1] is False  # packed, not a whole node
    assert place(cpu, nodes, "pack") == place(cpu, nodes[:1], "pack")  # a CPU job still keeps off GPU nodes
