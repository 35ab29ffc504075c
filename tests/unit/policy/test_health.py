"""Node health verdicts from readings."""

from __future__ import annotations

from frontdesk.policy.config import HealthConfig
from frontdesk.policy.health import HealthReading, evaluate

CFG = HealthConfig(max_gpu_temp_c=85, min_free_disk=1024**3)


def test_healthy_node_stays() -> None:
    assert not evaluate(HealthReading("n", (60.0, 70.0), 10 * 1024**3, 0), CFG).drained


def test_hot_gpu_drains() -> None:
    v = evaluate(HealthReading("n", (60.0, 91.0)), CFG)
    assert v.drained and v.check == "gpu_temperature" and "91 C" in v.detail


def test_full_disk_drains() -> None:
    v = evaluate(HealthReading("n", (), 100 * 1024**2), CFG)
    assert v.drained and v.check == "free_disk"


def test_failing_command_drains_with_its_last_line() -> None:
    v = evaluate(HealthReading("n", (), None, 3, "checking\nECC errors on GPU 2\n"), CFG)
    assert v.drained and v.check == "command" and "exited 3: ECC errors on GPU 2" in v.detail
