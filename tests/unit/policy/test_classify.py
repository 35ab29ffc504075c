"""Classification of jobs without a type: class and reason, thresholds as settings."""

from __future__ import annotations

from frontdesk.policy.classify import classify
from frontdesk.policy.config import ClassifyConfig

CFG = ClassifyConfig()


def test_declared_type_wins() -> None:
    assert classify("hpc", 1, 8, 60, CFG) == ("hpc", "declared type hpc")


def test_many_gpus_and_long_is_training() -> None:
    cls, why = classify(None, 32, 8, 4 * 3600, CFG)
    assert cls == "training" and "8 GPUs" in why and "4h00m" in why


def test_many_cores_no_gpu_is_hpc() -> None:
    cls, why = classify(None, 128, 0, 3600, CFG)
    assert cls == "hpc" and "128 cores" in why


def test_small_and_short_is_agent() -> None:
    cls, why = classify(None, 2, 0, 600, CFG)
    assert cls == "agent" and "10m00s" in why


def test_small_without_walltime_is_not_agent() -> None:
    assert classify(None, 2, 0, None, CFG)[0] == "hpc"


def test_long_single_gpu_job_goes_where_gpus_are() -> None:
    assert classify(None, 4, 1, 5 * 3600, CFG)[0] == "training"


def test_thresholds_are_settings() -> None:
    cfg = ClassifyConfig(agent_max_walltime=3600, hpc_min_cpus=8)
    assert classify(None, 2, 0, 3000, cfg)[0] == "agent"
    assert classify(None, 8, 0, 7200, cfg)[0] == "hpc"
