"""Fractional GPU requests in a spec: `gpus: 0.25` and `gpu: {memory: 20G}` become one shared GPU.

A shared request is stored as `gpus: 1` with `gpu.share` and/or `gpu.memory` set, so every layer that counts
GPUs still sees a GPU job (routing, classes, Slurm partitions) while backends pack shared jobs by memory.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["fractional_gpus"]

_BAD = "gpus must be a whole number, or a fraction between 0 and 1 for a share of one GPU; got {!r}"


def _number(value: Any) -> float | None:
    """The numeric value of a `gpus:` entry that is not a whole number, else None (left to the int field)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        if not value.isascii() or "_" in value:  # float() reads '٠.٥' and '1_0'; sbatch and people do not
            raise ValueError(_BAD.format(value))
        try:
            value = float(value.strip())
        except ValueError:
            return None  # the int field says what is wrong
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(_BAD.format(value))
        return None if value.is_integer() else value
    return None


def _gpu_fields(gpu: Any) -> dict[str, Any] | None:
    if gpu is None:
        return {}
    if isinstance(gpu, Mapping):
        return dict(gpu)
    dump = getattr(gpu, "model_dump", None)
    return dict(dump(exclude_defaults=True)) if callable(dump) else None


def fractional_gpus(data: Any) -> Any:
    """Rewrite a Resources mapping holding a fractional request into its stored form (see the module doc)."""
    if not isinstance(data, Mapping):
        return data
    frac = _number(data.get("gpus"))
    gpu = _gpu_fields(data.get("gpu"))
    if gpu is None:
        return data
    asks_memory = gpu.get("memory") is not None or gpu.get("share") is not None
    if frac is None and not (asks_memory and data.get("gpus") in (None, 0)):
        return data
    out = dict(data)
    if frac is not None:
        if not 0 < frac < 1:
            raise ValueError(_BAD.format(frac))
        if gpu.get("share") is not None and float(gpu["share"]) != frac:
            raise ValueError(f"gpus: {frac} and gpu.share: {gpu['share']} disagree; give one of them")
        gpu["share"] = frac
    out["gpus"] = 1
    out["gpu"] = gpu
    return out
