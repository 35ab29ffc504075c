"""The accelerator catalog (public data-sheet figures) and constraint-based model choice.

Figures are per GPU, dense (no sparsity), SXM/OAM variants unless the model only ships as PCIe.
Sources: NVIDIA V100, A100, H100, H200, HGX B200 and L40S data sheets; AMD Instinct MI250X data sheet.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass

__all__ = [
    "Accelerator",
    "CATALOG",
    "GpuNeed",
    "canonical",
    "catalog",
    "eligible",
    "match_model",
    "prefer_least_scarce",
]

GB = 1000**3
GiB = 1024**3
"""A data sheet's "80 GB" of GPU memory is 80 GiB (nvidia-smi: 81920 MiB), and so is the `80G` a spec asks for:
in decimal bytes `min_memory: 80G` excluded every 80 GB model and `gpu.memory: 40G` took 5 of 8 shards."""


@dataclass(frozen=True)
class Accelerator:
    """One accelerator model as a scheduler sees it."""

    name: str
    vendor: str
    memory_bytes: int
    bandwidth_gbs: float
    fp64_tflops: float
    fp32_tflops: float
    bf16_tflops: float | None
    interconnect: str
    """Family: nvlink, infinity-fabric or pcie."""
    link_gbs: float
    """GPU-to-GPU bandwidth per GPU (GB/s)."""

    @property
    def fp64_capable(self) -> bool:
        """Full-rate double precision (what `fp64: true` asks for)."""
        return self.fp64_tflops >= 5.0

    def to_dict(self) -> dict[str, object]:
        """Plain JSON form."""
        return {**asdict(self), "memory_gb": round(self.memory_bytes / GiB), "fp64_capable": self.fp64_capable}


CATALOG: tuple[Accelerator, ...] = (
    Accelerator("V100", "nvidia", 32 * GiB, 900, 7.8, 15.7, None, "nvlink", 300),
    Accelerator("A100-40G", "nvidia", 40 * GiB, 1555, 9.7, 19.5, 312, "nvlink", 600),
    Accelerator("A100-80G", "nvidia", 80 * GiB, 2039, 9.7, 19.5, 312, "nvlink", 600),
    Accelerator("H100", "nvidia", 80 * GiB, 3350, 34, 67, 989, "nvlink", 900),
    Accelerator("H200", "nvidia", 141 * GiB, 4800, 34, 67, 989, "nvlink", 900),
    Accelerator("B200", "nvidia", 180 * GiB, 8000, 37, 75, 2250, "nvlink", 1800),
    Accelerator("L40S", "nvidia", 48 * GiB, 864, 1.4, 91.6, 362, "pcie", 64),
    Accelerator("MI250X", "amd", 128 * GiB, 3277, 47.9, 47.9, 383, "infinity-fabric", 800),
)

_ALIASES = {
    "A100": "A100-80G",
    "A100-80GB": "A100-80G",
    "A100-40GB": "A100-40G",
    "H100-80G": "H100",
    "MI250": "MI250X",
}


def catalog(extra: Iterable[Mapping[str, object]] = ()) -> dict[str, Accelerator]:
    """The shipped catalog plus site entries from `[policy] catalog_extra`, by name."""
    out = {a.name: a for a in CATALOG}
    for item in extra:
        acc = Accelerator(**item)  # type: ignore[arg-type]
        out[acc.name] = acc
    return out


def canonical(name: str) -> str:
    """The catalog's spelling of a model name (`a100` → `A100-80G`)."""
    up = name.strip().upper()
    return _ALIASES.get(up, up)


@dataclass(frozen=True)
class GpuNeed:
    """A job's accelerator constraints."""

    types: tuple[str, ...] = ()
    min_memory: int | None = None
    fp64: bool = False
    interconnect: str | None = None


def eligible(need: GpuNeed, models: Mapping[str, Accelerator]) -> list[str]:
    """Model names that satisfy every constraint of `need` (all models when there are none)."""
    wanted = {canonical(t) for t in need.types}
    out = []
    for name, acc in models.items():
        if wanted and name.upper() not in wanted:
            continue
        if need.min_memory and acc.memory_bytes < need.min_memory:
            continue
        if need.fp64 and not acc.fp64_capable:
            continue
        if need.interconnect and not acc.interconnect.startswith(need.interconnect.lower()):
            continue
        out.append(name)
    return out


def prefer_least_scarce(
    names: Sequence[str], free: Mapping[str, int], total: Mapping[str, int], models: Mapping[str, Accelerator]
) -> list[str]:
    """Order eligible models least scarce first (most free share), then smallest memory: not the biggest."""

    def key(name: str) -> tuple[float, int]:
        tot = total.get(name, 0)
        share = free.get(name, 0) / tot if tot else 0.0
        return (-share, models[name].memory_bytes if name in models else 0)

    return sorted(names, key=key)


def match_model(reported: str, memory_bytes: int = 0, models: Mapping[str, Accelerator] | None = None) -> str | None:
    """The catalog name for a model string as nvidia-smi prints it (`NVIDIA H100 80GB HBM3` → H100)."""
    text = reported.upper().replace(" ", "").replace("-", "")
    table = models or {a.name: a for a in CATALOG}
    hits = [name for name in table if name.split("-")[0].replace("-", "") in text]
    if not hits:
        return None
    if len(hits) > 1 and memory_bytes:
        return min(hits, key=lambda n: abs(table[n].memory_bytes - memory_bytes))
    return sorted(hits, key=lambda n: -table[n].memory_bytes)[0] if "80" in text else sorted(hits)[0]
