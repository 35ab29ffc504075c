"""The accelerator catalog, re-exported for the policy code: it lives in `frontdesk.spec.accelerators`.

The catalog is pure data about accelerator models, so it sits in the models layer where the Slurm backend's
placement can read it too (a backend must not import the policy plug-in).
"""

from __future__ import annotations

from frontdesk.spec.accelerators import (
    CATALOG,
    Accelerator,
    GpuNeed,
    canonical,
    catalog,
    eligible,
    match_model,
    prefer_least_scarce,
)

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
