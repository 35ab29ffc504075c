"""The accelerator catalog and constraint-based eligibility preferring the least scarce model."""

from __future__ import annotations

import json

from frontdesk.spec.accelerators import CATALOG, GpuNeed, catalog, eligible, match_model, prefer_least_scarce

GB = 1000**3
GiB = 1024**3


def test_ships_the_issue_models_with_data_sheet_figures() -> None:
    by = {a.name: a for a in CATALOG}
    assert set(by) >= {"V100", "A100-40G", "A100-80G", "H100", "H200", "B200", "L40S", "MI250X"}
    assert by["H200"].memory_bytes == 141 * GiB and by["H200"].bandwidth_gbs == 4800
    assert by["H100"].fp64_tflops == 34 and by["H100"].bf16_tflops == 989
    assert by["V100"].bf16_tflops is None
    assert by["MI250X"].interconnect == "infinity-fabric" and by["MI250X"].memory_bytes == 128 * GiB
    assert by["L40S"].interconnect == "pcie" and not by["L40S"].fp64_capable


def test_constraints_pick_eligible_models() -> None:
    models = catalog()
    assert set(eligible(GpuNeed(min_memory=100 * GB), models)) == {"H200", "B200", "MI250X"}
    assert "L40S" not in eligible(GpuNeed(fp64=True), models)
    assert set(eligible(GpuNeed(interconnect="nvlink", min_memory=80 * GB), models)) == {
        "A100-80G",
        "H100",
        "H200",
        "B200",
    }
    assert eligible(GpuNeed(types=("a100",)), models) == ["A100-80G"]


def test_least_scarce_first_not_the_biggest() -> None:
    models = catalog()
    names = eligible(GpuNeed(min_memory=80 * GB), models)
    total = {"H100": 64, "H200": 16, "B200": 8, "A100-80G": 32}
    free = {"H100": 8, "H200": 12, "B200": 8, "A100-80G": 30}
    order = prefer_least_scarce([n for n in names if n in total], free, total, models)
    assert order[0] == "B200" or order[0] == "A100-80G"
    assert order.index("A100-80G") < order.index("H200") < order.index("H100")


def test_match_reported_model_names() -> None:
    assert match_model("NVIDIA H100 80GB HBM3") == "H100"
    assert match_model("NVIDIA A100-SXM4-80GB") == "A100-80G"
    assert match_model("NVIDIA A100-SXM4-40GB", 40 * GB) == "A100-40G"
    assert match_model("Tesla V100-SXM2-32GB") == "V100"
    assert match_model("virtual") is None


def test_a_spec_asking_a_models_own_memory_gets_that_model() -> None:
    """`min_memory: 80G` is 80 GiB as a spec parses it; an 80 GB A100 has 81920 MiB (probe 21: it was excluded)."""
    from frontdesk.spec.model import parse_spec_text

    models = catalog()
    for size, model in (("80G", "A100-80G"), ("80G", "H100"), ("40G", "A100-40G"), ("32G", "V100"), ("48G", "L40S")):
        text = json.dumps({"command": ["x"], "resources": {"gpus": 1, "gpu": {"min_memory": size}}})
        need = parse_spec_text(text, "json").resources.gpu
        assert need is not None and model in eligible(GpuNeed(min_memory=need.min_memory), models), (size, model)
